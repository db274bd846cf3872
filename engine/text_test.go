package engine

import (
	"testing"
	"time"
)

// Every setting is set from the text its flag takes, and a text it cannot
// read leaves it as it was and says why.
func TestSetFromText(t *testing.T) {
	s := Defaults()
	for name, text := range map[string]string{"algo": "cmp", "max-iter": "0x10", "time-limit": "1.5", "tol": "1e-3", "exact": "true", "eps-descent": "1", "tighten": "cycles"} {
		if err := s.Set(name, text); err != nil {
			t.Fatalf("%s=%s: %v", name, text, err)
		}
		if !s.Given[name] {
			t.Errorf("%s: not recorded as given", name)
		}
	}
	if s.Algo != "cmp" || s.MaxIter != 16 || s.TimeLimit != 1500*time.Millisecond || s.Tol != 1e-3 || !s.Exact || !s.EpsDescent || s.Tighten != "cycles" {
		t.Errorf("settings %+v", s)
	}
	for _, c := range []struct{ name, text, err string }{
		{"max-iter", "abc", "parse error"}, {"threads", "99999999999999999999", "value out of range"},
		{"time-limit", "soon", "use e.g. 30s, 5m or 1h (a bare number is seconds)"}, {"exact", "maybe", "parse error"},
		{"bogus", "1", "--bogus: unknown setting"},
	} {
		before := s
		err := s.Set(c.name, c.text)
		if err == nil || err.Error() != c.err {
			t.Errorf("%s=%s: %v, want %q", c.name, c.text, err, c.err)
		}
		if s.MaxIter != before.MaxIter || s.Threads != before.Threads || s.TimeLimit != before.TimeLimit || s.Exact != before.Exact {
			t.Errorf("%s=%s changed the settings", c.name, c.text)
		}
	}
	if len(Names()) != 15 {
		t.Errorf("%d names: %v", len(Names()), Names())
	}
}
