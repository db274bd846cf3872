package service

import (
	"fmt"
	"net/http"
	"sync"
	"time"
)

// Replay protection of the NATS API's submits. A submit carries a nonce
// and the time it was sent (NATSRequest.Nonce, Sent); sealed with the job
// key, both are authentic. The service takes a submit sent within
// NonceWindow of its own clock whose nonce (with its client) it has not
// seen in that window, and remembers the nonce with the job it created
// until the window has passed: a copy of the request, replayed or retried,
// gets that job back instead of a new one, and one older than the window
// is refused.
const (
	// NonceWindow is how far a submit's Sent may be from the service's
	// clock, either way, and how long its nonce is remembered (twice
	// that, so that a copy cannot outlive its record).
	NonceWindow = 5 * time.Minute
	// MinNonceLen and MaxNonceLen bound a nonce's length (16 random bytes
	// in hex, say).
	MinNonceLen, MaxNonceLen = 16, 128
	// maxNonces bounds the nonces remembered; a submit finding them full
	// of unexpired ones is refused (429) rather than forgotten.
	maxNonces = 1 << 16
)

// nonces remembers the nonces of recent submits, by client.
type nonces struct {
	mu   sync.Mutex
	seen map[string]nonceEntry // client + "\x00" + nonce
}

type nonceEntry struct {
	id    string // the job created ("" while it is being submitted)
	until time.Time
}

// claim checks a submit's nonce and time against now. A new nonce is
// recorded (done later records its job) and claim returns "", nil; a
// known one returns the job it created; an error says why the submit is
// refused.
func (n *nonces) claim(client, nonce string, sent int64, now time.Time) (id string, err error) {
	if l := len(nonce); l < MinNonceLen || l > MaxNonceLen {
		return "", Invalid(fmt.Errorf("a sealed submit needs a nonce of %d to %d characters, got %d", MinNonceLen, MaxNonceLen, l))
	}
	at := time.UnixMilli(sent)
	if sent <= 0 || now.Sub(at) > NonceWindow || at.Sub(now) > NonceWindow {
		return "", Invalid(fmt.Errorf("a sealed submit must be sent within %v of the service's clock (sent %d ms, now %d ms): a replay, or a clock to set", NonceWindow, sent, now.UnixMilli()))
	}
	key := client + "\x00" + nonce
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.seen == nil {
		n.seen = map[string]nonceEntry{}
	}
	if e, ok := n.seen[key]; ok {
		if e.id == "" {
			return "", &apiError{http.StatusConflict, "this submit (its nonce) is already being handled"}
		}
		return e.id, nil
	}
	if len(n.seen) >= maxNonces {
		for k, e := range n.seen {
			if now.After(e.until) {
				delete(n.seen, k)
			}
		}
		if len(n.seen) >= maxNonces {
			return "", &apiError{http.StatusTooManyRequests, fmt.Sprintf("%d submits in the last %v: try again later", maxNonces, 2*NonceWindow)}
		}
	}
	n.seen[key] = nonceEntry{until: now.Add(2 * NonceWindow)}
	return "", nil
}

// done records the job a claimed nonce created, or forgets the nonce when
// the submit failed (id ""): the same request may then be tried again.
func (n *nonces) done(client, nonce, id string) {
	key := client + "\x00" + nonce
	n.mu.Lock()
	defer n.mu.Unlock()
	if id == "" {
		delete(n.seen, key)
		return
	}
	if e, ok := n.seen[key]; ok {
		e.id = id
		n.seen[key] = e
	}
}
