package engine

import (
	"os"
	"reflect"
	"strings"
	"testing"
)

// Every setting has its default in the table, formatted from Defaults,
// and docs/defaults.md holds the table as DefaultsMarkdown writes it (run
// the test with DDRUN_WRITE_DEFAULTS=1 to rewrite the page's table).
func TestDefaultTable(t *testing.T) {
	rows := DefaultTable()
	names := Names()
	if len(rows) != len(names) {
		t.Fatalf("%d rows for %d settings", len(rows), len(names))
	}
	d := Defaults()
	for i, r := range rows {
		if r.Name != names[i] || r.Value == "" {
			t.Fatalf("row %d: %+v", i, r)
		}
		// The text reads back as the default where it is a value.
		var s Settings = d
		switch r.Name {
		case "algo", "threads", "anytime", "time-limit":
			continue
		}
		if err := s.Set(r.Name, r.Value); err != nil {
			t.Fatalf("%s: default %q does not read back: %v", r.Name, r.Value, err)
		}
		s.Given = nil
		if !reflect.DeepEqual(s, d) {
			t.Fatalf("%s: default %q reads back as other settings", r.Name, r.Value)
		}
	}
	const page = "../docs/defaults.md"
	doc, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	const start, end = "<!-- table: engine.DefaultsMarkdown -->\n", "<!-- end of table -->"
	text := string(doc)
	i, j := strings.Index(text, start), strings.Index(text, end)
	if i < 0 || j < i {
		t.Fatalf("%s: no table markers", page)
	}
	want := DefaultsMarkdown()
	if got := text[i+len(start) : j]; got != want {
		if os.Getenv("DDRUN_WRITE_DEFAULTS") == "1" {
			os.WriteFile(page, []byte(text[:i+len(start)]+want+text[j:]), 0o644)
			return
		}
		t.Fatalf("%s's table is not engine's (DDRUN_WRITE_DEFAULTS=1 rewrites it):\n%s\nwant:\n%s", page, got, want)
	}
}
