package checkpoint

import (
	"context"
	"errors"
	"fmt"
)

// Store holds the blobs of checkpoints as immutable objects named by the
// lower-case hex sha256 of their bytes. Implementations are safe for
// concurrent use. A Store does not check that a name is the hash of the
// data it is given (Write computes the names and Read verifies the bytes);
// it does reject names that are not 64 lower-case hex digits.
type Store interface {
	// Put stores data under name (the sha256 hex of data); storing an
	// existing object is a no-op.
	Put(ctx context.Context, name string, data []byte) error
	// Get returns the object's bytes, or an error wrapping ErrNotFound.
	// A store that detects damage itself (ObjectStore checks a digest)
	// returns an error wrapping ErrCorrupt; others return the bytes and
	// leave the check to Read.
	Get(ctx context.Context, name string) ([]byte, error)
	// Delete removes the object; deleting a missing object is not an
	// error.
	Delete(ctx context.Context, name string) error
	// List returns the names of the stored objects in no particular
	// order.
	List(ctx context.Context) ([]string, error)
}

// ErrNotFound is wrapped by the error of Store.Get for a missing object.
var ErrNotFound = errors.New("checkpoint object not found")

// ErrCorrupt is wrapped by the error of Store.Get for an object the store
// found damaged.
var ErrCorrupt = errors.New("checkpoint object corrupt")

// checkName rejects a name that is not a sha256 hex digest, which also
// keeps names safe as file names and subject tokens.
// checkOp checks, before operation op on object name, the name and that
// ctx is not done.
func checkOp(ctx context.Context, op, name string) error {
	if err := checkName(name); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%s %s: %w", op, name, err)
	}
	return nil
}

func checkName(name string) error {
	if !validObject(name) {
		return fmt.Errorf("checkpoint object %q: not a lower-case sha256 hex digest", name)
	}
	return nil
}
