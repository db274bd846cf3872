package transport

import (
	"regexp"
	"strings"
)

// userinfo matches the user information of a URL in free text:
// scheme://user:password@ or scheme://token@.
var userinfo = regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.-]*://)([^/@\s:,"']*)(:[^/@\s,"']*)?@`)

// minSecretLen is the shortest secret Redact replaces where it appears
// outside a URL: shorter ones would blot out ordinary words.
const minSecretLen = 4

// Redacted replaces a secret.
const Redacted = "xxxxx"

// Redact hides credentials in s, a message or a URL list that may be
// logged: the password of every user:password@ in a URL, a token@ alone in
// a URL, and every occurrence of the given secrets (of at least 4 bytes;
// passwords, tokens) anywhere.
func Redact(s string, secrets ...string) string {
	for _, sec := range secrets {
		if len(sec) >= minSecretLen {
			s = strings.ReplaceAll(s, sec, Redacted)
		}
	}
	return userinfo.ReplaceAllStringFunc(s, func(m string) string {
		g := userinfo.FindStringSubmatch(m)
		if g[3] != "" { // user:password@
			return g[1] + g[2] + ":" + Redacted + "@"
		}
		return g[1] + Redacted + "@" // a token, or a user name alone
	})
}
