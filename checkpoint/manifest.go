package checkpoint

import (
	"encoding/json"
	"fmt"
	"time"
)

// Blob names one stored object of a checkpoint: its role in the
// checkpoint (for example "master" or "part-3"), its content address and
// size. Object is the lower-case hex sha256 of the bytes, so a blob is
// written once whatever the number of manifests naming it.
type Blob struct {
	Role   string `json:"role"`
	Object string `json:"object"`
	Size   int64  `json:"size"`
}

// Manifest describes one complete checkpoint. It is small (a few KB): it
// is what a Raft entry or a manifest file holds, the bulk lives in the
// store. A checkpoint is valid only when every blob it names is present
// and hashes to its name.
type Manifest struct {
	Job       string    `json:"job"`
	Epoch     uint64    `json:"epoch"`
	Iteration int       `json:"iteration"`
	Created   time.Time `json:"created"`
	// Meta carries small scalars the owner wants next to the blobs (for
	// example the best dual and primal), opaque to this package.
	Meta  json.RawMessage `json:"meta,omitempty"`
	Blobs []Blob          `json:"blobs"`
	// Seal authenticates the rest with the job key (seal.go): Write sets
	// it on a sealed store, whose Read refuses a manifest without a
	// valid one as torn. Empty on an unsealed store.
	Seal []byte `json:"seal,omitempty"`
}

// Find returns the blob with the given role.
func (m *Manifest) Find(role string) (Blob, bool) {
	for _, b := range m.Blobs {
		if b.Role == role {
			return b, true
		}
	}
	return Blob{}, false
}

// Validate checks the manifest's own consistency (not the store's).
func (m *Manifest) Validate() error {
	seen := map[string]bool{}
	for i, b := range m.Blobs {
		switch {
		case b.Role == "":
			return fmt.Errorf("manifest %s@%d: blob %d has no role", m.Job, m.Iteration, i)
		case seen[b.Role]:
			return fmt.Errorf("manifest %s@%d: role %q twice", m.Job, m.Iteration, b.Role)
		case !validObject(b.Object):
			return fmt.Errorf("manifest %s@%d: blob %q: object %q is not a sha256 hex digest", m.Job, m.Iteration, b.Role, b.Object)
		case b.Size < 0:
			return fmt.Errorf("manifest %s@%d: blob %q: negative size", m.Job, m.Iteration, b.Role)
		}
		seen[b.Role] = true
	}
	return nil
}

func validObject(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}
