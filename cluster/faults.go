package cluster

import (
	"crypto/rand"
	"encoding/binary"
	"log/slog"
	"time"

	"github.com/ddrun/ddrun/internal/ratelimit"
)

// faultLogEvery is how often one kind of dropped message is logged.
const faultLogEvery = 5 * time.Second

// faultLog logs dropped messages (malformed, inconsistent, forged) at most
// once per kind every faultLogEvery, with the number it did not log since:
// a stream of bad messages costs a line every few seconds, not one each.
type faultLog struct {
	log   *slog.Logger
	limit ratelimit.Repeats[string]
}

func newFaultLog(log *slog.Logger) *faultLog {
	return &faultLog{log: log, limit: ratelimit.Repeats[string]{Every: faultLogEvery}}
}

// drop records a dropped message of the given kind and logs it unless
// one of its kind was logged less than faultLogEvery ago.
func (f *faultLog) drop(kind string, args ...any) {
	if n, ok := f.limit.Admit(kind); ok {
		f.log.Warn(kind, append(args, "suppressed", n)...)
	}
}

// newCoordID returns a random id for a coordinator's epoch of a job: its
// assignments carry it and workers take steps (and the stop) only with it.
func newCoordID() uint64 {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return uint64(time.Now().UnixNano())
	}
	return binary.LittleEndian.Uint64(b[:]) | 1
}
