package transport

import (
	"context"
	"strings"
	"testing"
	"time"
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

// Notify signals when messages arrive (its buffer holds one signal, so it
// never blocks the transport), and again after a signal was taken.
func TestNotify(t *testing.T) {
	tr := NewInProc()
	defer tr.Close()
	c, sub, err := Notify(tr, "ddrun.solicit")
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	for range 3 {
		if err := tr.Publish(context.Background(), "ddrun.solicit", []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	if err := tr.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	wait := func() bool {
		select {
		case <-c:
			return true
		case <-time.After(2 * time.Second):
			return false
		}
	}
	if !wait() {
		t.Fatal("no signal")
	}
	for len(c) > 0 { // a signal of the first three delivered since
		<-c
	}
	if err := tr.Publish(context.Background(), "ddrun.solicit", nil); err != nil {
		t.Fatal(err)
	}
	if !wait() {
		t.Fatal("no signal after the first was taken")
	}
}
