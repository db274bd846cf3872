package shard

import (
	"fmt"

	"github.com/vmihailenco/msgpack/v5"
)

// Spec is one worker's part of a sharded job: where the model file is, the
// range of factors it holds, and what it must know of the rest (its
// boundary variables and their degrees in the whole decomposition). It is
// O(the worker's boundary) bytes.
type Spec struct {
	Path string `msgpack:"path"`
	// Size and StructureCRC bind the spec to the file the coordinator
	// planned (its trailer's structure checksum): a worker that finds
	// another file refuses the part.
	Size         int64  `msgpack:"size"`
	StructureCRC uint32 `msgpack:"crc"`
	NumVars      int    `msgpack:"nvars"`
	// From and To: the worker's factors [From, To), whose first record
	// starts at byte Pos of the file.
	From int   `msgpack:"from"`
	To   int   `msgpack:"to"`
	Pos  int64 `msgpack:"pos"`
	// Boundary lists the worker's boundary variables (increasing) and
	// Degree their number of slaves over all workers.
	Boundary []int64 `msgpack:"bnd"`
	Degree   []int32 `msgpack:"deg"`
	// Isolated lists variables in no factor that the worker holds.
	Isolated []int64 `msgpack:"iso"`
	// ReplicaEntries is the part's replica entries (a check).
	ReplicaEntries int `msgpack:"entries"`
	// MaxEntries bounds the total states and payload entries read.
	MaxEntries int `msgpack:"max"`
}

// Encode returns the spec's wire form.
func (s *Spec) Encode() ([]byte, error) { return msgpack.Marshal(s) }

// DecodeSpec reads a spec's wire form.
func DecodeSpec(data []byte) (*Spec, error) {
	var s Spec
	if err := msgpack.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("shard: decoding a part's spec: %w", err)
	}
	return &s, nil
}
