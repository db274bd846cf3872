package service

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Replay protection across the services of a cluster. The services of one
// NATS server answer the API's requests as one queue group: each request
// goes to any of them, so a nonce remembered by one service alone lets a
// copy of a submit, replayed until it reaches every service, make one job
// per service. A SharedNonces (Options.Nonces) records the nonces where
// every service sees them, and a submit is taken only by the service that
// records its nonce first; the others answer the copies with the job it
// made (when it is theirs) or 409. The time window and the per-service
// record (nonce.go) still apply first.

// SharedNonces records the nonces of submits for all the services of a
// cluster. Keys are nonceKey's: a digest of a client and a nonce.
type SharedNonces interface {
	// Claim records key, and says whether it was new; a key recorded
	// already gives the job recorded with it ("" while the service that
	// took it is still submitting it).
	Claim(ctx context.Context, key string) (fresh bool, id string, err error)
	// Done records the job a claimed key's submit created, or forgets
	// the key when the submit failed (id ""): the request may be retried.
	Done(ctx context.Context, key, id string) error
}

// NonceBucket is the JetStream key-value bucket of NewKVNonces.
const NonceBucket = "ddrun-api-nonces"

// maxNonceBytes bounds the bucket: when it is full of unexpired nonces a
// submit is refused (503), never forgotten.
const maxNonceBytes = 64 << 20

// nonceKey is the key of client's nonce: hex, as a bucket key must be,
// and of a fixed length whatever the nonce.
func nonceKey(client, nonce string) string {
	sum := sha256.Sum256([]byte(client + "\x00" + nonce))
	return hex.EncodeToString(sum[:])
}

// kvNonces is SharedNonces in a JetStream key-value bucket: Create is
// atomic on the server, so of two services recording one key at once
// exactly one gets it.
type kvNonces struct {
	kv jetstream.KeyValue
}

// NewKVNonces opens the bucket NonceBucket on nc's JetStream, creating it
// when missing (file storage, one value per key, entries expiring after
// three times NonceWindow: the two windows a copy can be taken in, and one
// for the services' clock skew). Without JetStream on the
// server it fails, and its caller keeps to the per-service record.
func NewKVNonces(ctx context.Context, nc *nats.Conn) (SharedNonces, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("nonce bucket %s: %w", NonceBucket, err)
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	kv, err := js.KeyValue(ctx, NonceBucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		kv, err = js.CreateKeyValue(ctx, jetstream.KeyValueConfig{
			Bucket:       NonceBucket,
			Description:  "ddrun job service: nonces of recent NATS API submits",
			History:      1,
			TTL:          3 * NonceWindow, // a copy is taken up to 2 windows after it was sent; one more for the services' clock skew
			MaxValueSize: 64,
			MaxBytes:     maxNonceBytes,
			Storage:      jetstream.FileStorage,
		})
		if errors.Is(err, jetstream.ErrBucketExists) {
			kv, err = js.KeyValue(ctx, NonceBucket) // created meanwhile by another service
		}
	}
	if err != nil {
		return nil, fmt.Errorf("nonce bucket %s: %w", NonceBucket, err)
	}
	return &kvNonces{kv: kv}, nil
}

func (n *kvNonces) Claim(ctx context.Context, key string) (bool, string, error) {
	_, err := n.kv.Create(ctx, key, nil)
	if err == nil {
		return true, "", nil
	}
	if !errors.Is(err, jetstream.ErrKeyExists) {
		return false, "", err
	}
	e, err := n.kv.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return false, "", nil // forgotten meanwhile: still being handled, for this copy
	}
	if err != nil {
		return false, "", err
	}
	return false, string(e.Value()), nil
}

func (n *kvNonces) Done(ctx context.Context, key, id string) error {
	if id == "" {
		return n.kv.Delete(ctx, key)
	}
	_, err := n.kv.Put(ctx, key, []byte(id))
	return err
}

// claimShared is the cluster-wide half of a submit's nonce check, after
// the per-service one took it as new: "" for a submit no service has
// taken (this one now has), else the job another copy created.
func (s *Service) claimShared(client, nonce string) (string, error) {
	ctx, cancel := context.WithTimeout(s.ctx, 10*time.Second)
	defer cancel()
	fresh, id, err := s.opts.Nonces.Claim(ctx, nonceKey(client, nonce))
	switch {
	case err != nil:
		s.log.Warn("recording a submit's nonce", "err", err)
		return "", errUnavailable("the submit's nonce could not be recorded: try again later")
	case fresh:
		return "", nil
	case id == "":
		return "", &apiError{http.StatusConflict, "this submit (its nonce) is already being handled"}
	}
	return id, nil
}

// doneShared records with Options.Nonces the job a submit created, or
// forgets its nonce (id "").
func (s *Service) doneShared(client, nonce, id string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(s.ctx), 10*time.Second)
	defer cancel()
	if err := s.opts.Nonces.Done(ctx, nonceKey(client, nonce), id); err != nil {
		s.log.Warn("recording a submit's job with its nonce", "job", id, "err", err)
	}
}
