package transport

import (
	"fmt"
	"strings"
)

// ValidName reports whether s can be a name in a Header (Job, From): 1 to
// MaxNameLen bytes of ASCII letters, digits, '-' and '_'. Such a name is
// also exactly one subject token.
func ValidName(s string) error {
	if s == "" {
		return fmt.Errorf("empty name")
	}
	if len(s) > MaxNameLen {
		return fmt.Errorf("name of %d bytes, longer than %d", len(s), MaxNameLen)
	}
	for i := 0; i < len(s); i++ {
		if !nameByte(s[i]) {
			return fmt.Errorf("name %q: byte %q at %d is not a letter, digit, '-' or '_'", s, s[i], i)
		}
	}
	return nil
}

func nameByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_'
}

// SanitizeName maps s to a ValidName: disallowed bytes become '_', an empty
// s becomes "_", and the result is cut to MaxNameLen bytes. Use it to turn
// host names like "node1.example.org" into sender names.
func SanitizeName(s string) string {
	if s == "" {
		return "_"
	}
	b := []byte(s)
	if len(b) > MaxNameLen {
		b = b[:MaxNameLen]
	}
	for i, c := range b {
		if !nameByte(c) {
			b[i] = '_'
		}
	}
	return string(b)
}

// checkSubject validates a NATS-style subject: non-empty dot-separated
// tokens without whitespace; with wildcards, a token may be "*" and the last
// one ">".
func checkSubject(s string, wildcards bool) error {
	if s == "" {
		return fmt.Errorf("transport: empty subject")
	}
	if len(s) > 1024 {
		return fmt.Errorf("transport: subject of %d bytes is too long", len(s))
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c == 0x7f {
			return fmt.Errorf("transport: subject %q has a space or control byte", s)
		}
	}
	toks := strings.Split(s, ".")
	for i, t := range toks {
		switch {
		case t == "":
			return fmt.Errorf("transport: subject %q has an empty token", s)
		case t == "*" || t == ">":
			if !wildcards {
				return fmt.Errorf("transport: cannot publish to wildcard subject %q", s)
			}
			if t == ">" && i != len(toks)-1 {
				return fmt.Errorf("transport: subject %q: '>' must be the last token", s)
			}
		case strings.ContainsAny(t, "*>"):
			return fmt.Errorf("transport: subject %q: '*' and '>' must be whole tokens", s)
		}
	}
	return nil
}

// matchSubject reports whether a literal subject matches pattern, with NATS
// semantics: "*" matches one token, a final ">" one or more.
func matchSubject(pattern, subject string) bool {
	for {
		pt, prest, pmore := strings.Cut(pattern, ".")
		if pt == ">" {
			return subject != ""
		}
		st, srest, smore := strings.Cut(subject, ".")
		if pt != "*" && pt != st {
			return false
		}
		if !pmore || !smore {
			return pmore == smore
		}
		pattern, subject = prest, srest
	}
}

// Notify subscribes to subject on tr and signals on the channel it returns
// when a message arrives there, whatever it holds (a solicitation, which
// can only cause an announcement): signals that arrive before the last was
// taken coalesce into one.
func Notify(tr Transport, subject string) (<-chan struct{}, Subscription, error) {
	c := make(chan struct{}, 1)
	sub, err := tr.Subscribe(subject, func(string, []byte) {
		select {
		case c <- struct{}{}:
		default:
		}
	})
	if err != nil {
		return nil, nil, err
	}
	return c, sub, nil
}
