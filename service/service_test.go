package service

import (
	"net/url"
	"testing"
)

func TestSniff(t *testing.T) {
	for _, c := range []struct {
		head []byte
		want string
	}{
		{[]byte{0x1f, 0x8b, 8}, "uai.gz"},
		{[]byte(`{"format":"ddrun-model"}`), "json"},
		{[]byte{0x85, 0xa6}, "msgpack"},
		{[]byte{0xde, 0, 5}, "msgpack"},
		{[]byte("MARKOV\n3\n"), "uai"},
		{nil, "uai"},
	} {
		if got := sniff(c.head); got != c.want {
			t.Errorf("sniff(%q) = %s, want %s", c.head, got, c.want)
		}
	}
}

func TestValidID(t *testing.T) {
	for id, want := range map[string]bool{
		newID(): true, "j0123456789abcdef": true, "j0123456789abcdeg": false, "x0123456789abcdef": false,
		"j0123": false, "../../etc/passwd": false, "": false, "j0123456789abcdef0": false,
	} {
		if validID(id) != want {
			t.Errorf("validID(%q) = %v", id, !want)
		}
	}
}

func TestParseParams(t *testing.T) {
	allowed := []string{"algo", "max_iter"}
	for _, c := range []struct {
		query string
		ok    bool
		n     int
	}{
		{"algo=admm&max_iter=3", true, 2},
		{"format=uai&algo=admm", true, 1},
		{"", true, 0},
		{"algo=admm&algo=trws", false, 0},
		{"iters=3", false, 0},
	} {
		q, _ := url.ParseQuery(c.query)
		p, err := ParseParams(q, allowed)
		if (err == nil) != c.ok || len(p) != c.n {
			t.Errorf("ParseParams(%q) = %v, %v", c.query, p, err)
		}
		if err != nil && code(err) != 400 {
			t.Errorf("ParseParams(%q): error %v has status %d, want 400", c.query, err, code(err))
		}
	}
}
