package service

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
)

// MinTokenLen is the shortest token the service accepts, in bytes: a
// token is a secret that must not be guessed (openssl rand -hex 32 makes
// one of 64).
const MinTokenLen = 16

// Token is one API token: its secret and the client name it stands for
// (in the jobs' records, the logs and the per-client limits).
type Token struct {
	Name   string
	Secret []byte
}

// ParseTokens reads API tokens, one a line: "TOKEN" or "NAME TOKEN"
// (blank lines and lines starting with # are skipped). A token without a
// name is named client-HHHHHHHH, the first hex digits of its SHA-256 (so
// that a name reveals nothing of the token). name is the input's name in
// errors (a file name), which say where and never echo a token.
func ParseTokens(r io.Reader, name string) ([]Token, error) {
	var out []Token
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 4096), 64<<10)
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		f := strings.Fields(text)
		var t Token
		switch len(f) {
		case 1:
			t.Secret = []byte(f[0])
			sum := sha256.Sum256(t.Secret)
			t.Name = "client-" + hex.EncodeToString(sum[:4])
		case 2:
			t.Name, t.Secret = f[0], []byte(f[1])
		default:
			return nil, fmt.Errorf("%s:%d: want TOKEN or NAME TOKEN, got %d fields", name, line, len(f))
		}
		if len(t.Secret) < MinTokenLen {
			return nil, fmt.Errorf("%s:%d: token of %d bytes, want at least %d (e.g. openssl rand -hex 32)", name, line, len(t.Secret), MinTokenLen)
		}
		out = append(out, t)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no token", name)
	}
	return out, nil
}

// errUnauthorized is the answer to a request without a valid token.
var errUnauthorized = &apiError{http.StatusUnauthorized, "missing or invalid API token (Authorization: Bearer TOKEN)"}

// authorize returns the client whose token secret is, or an error
// (HTTP 401). Every configured token is compared, in constant time, on
// SHA-256 digests (so that neither the position of a first difference
// nor a length leaks); a service without tokens lets no one in.
func (s *Service) authorize(secret []byte) (string, error) {
	if len(secret) == 0 {
		return "", errUnauthorized
	}
	sum := sha256.Sum256(secret)
	client := ""
	for i, d := range s.digests {
		if subtle.ConstantTimeCompare(sum[:], d[:]) == 1 {
			client = s.opts.Tokens[i].Name
		}
	}
	if client == "" {
		return "", errUnauthorized
	}
	return client, nil
}

// bearer is the token of r's Authorization header ("Bearer TOKEN"), nil
// without one.
func bearer(r *http.Request) []byte {
	h := r.Header.Get("Authorization")
	if len(h) > 7 && strings.EqualFold(h[:7], "bearer ") {
		return bytes.TrimSpace([]byte(h[7:]))
	}
	return nil
}

// refused logs a refused request: the first from a source, then at most
// one every 10 s with how many were left out (a flood of bad tokens costs
// a line every few seconds).
func (s *Service) refused(msg, kind, source string, args ...any) {
	if n, ok := s.refusals.Admit(kind + " " + source); ok {
		s.log.Warn(msg, append([]any{kind, source, "left_out", n}, args...)...)
	}
}

// remoteHost is addr without its port (the source of refusals).
func remoteHost(addr string) string {
	if h, _, err := net.SplitHostPort(addr); err == nil {
		return h
	}
	return addr
}

// maxRefusedBody is how much of a refused request's body is read.
const maxRefusedBody = 1 << 20

// clientKey carries the authenticated client's name in a request's
// context.
type clientKey struct{}

// RequireToken wraps h so that only requests with a valid bearer token
// reach it: the others get 401 with a WWW-Authenticate header, and h
// never sees them.
func (s *Service) RequireToken(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		client, err := s.authorize(bearer(r))
		if err != nil {
			s.refused("API request refused: no valid token", "remote", remoteHost(r.RemoteAddr), "method", r.Method, "path", r.URL.Path)
			// A small body is read (and dropped) so that a client still
			// sending it gets the 401 rather than a reset connection; a
			// stranger's large one is not.
			_, _ = io.CopyN(io.Discard, r.Body, maxRefusedBody)
			w.Header().Set("WWW-Authenticate", `Bearer realm="ddrun"`)
			writeError(w, err)
			return
		}
		h.ServeHTTP(w, r.WithContext(withClient(r.Context(), client)))
	})
}

func withClient(ctx context.Context, client string) context.Context {
	return context.WithValue(ctx, clientKey{}, client)
}

// clientOf is the authenticated client of a request's context ("" when
// none: a caller of the Go API).
func clientOf(ctx context.Context) string {
	c, _ := ctx.Value(clientKey{}).(string)
	return c
}
