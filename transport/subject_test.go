package transport

import (
	"strings"
	"testing"
)

func TestMatchSubject(t *testing.T) {
	cases := []struct {
		pattern, subject string
		want             bool
	}{
		{"a.b", "a.b", true},
		{"a.b", "a.c", false},
		{"a.b", "a.b.c", false},
		{"a.b.c", "a.b", false},
		{"a.*", "a.b", true},
		{"a.*", "a.b.c", false},
		{"*.b", "a.b", true},
		{"a.>", "a.b", true},
		{"a.>", "a.b.c", true},
		{"a.>", "a", false},
		{">", "a", true},
		{">", "a.b", true},
		{"ddrun.j.report.*", "ddrun.j.report.w1", true},
		{"ddrun.j.report.*", "ddrun.j2.report.w1", false},
		{"ddrun.*.step", "ddrun.j.step", true},
	}
	for _, c := range cases {
		if got := matchSubject(c.pattern, c.subject); got != c.want {
			t.Errorf("match(%q, %q) = %v", c.pattern, c.subject, got)
		}
	}
}

func TestValidName(t *testing.T) {
	for _, s := range []string{"a", "job-1", "W_2", strings.Repeat("x", MaxNameLen)} {
		if err := ValidName(s); err != nil {
			t.Errorf("%q: %v", s, err)
		}
	}
	for _, s := range []string{"", "a.b", "a*", ">", "a b", "é", strings.Repeat("x", MaxNameLen+1)} {
		if ValidName(s) == nil {
			t.Errorf("%q accepted", s)
		}
	}
	for in, want := range map[string]string{"": "_", "node1.example.org": "node1_example_org", "ok-1": "ok-1", "a b>": "a_b_"} {
		if got := SanitizeName(in); got != want || ValidName(got) != nil {
			t.Errorf("SanitizeName(%q) = %q", in, got)
		}
	}
	if got := SanitizeName(strings.Repeat("é", 100)); ValidName(got) != nil {
		t.Errorf("SanitizeName of a long name: %q", got)
	}
}
