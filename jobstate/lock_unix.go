//go:build unix

package jobstate

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// lockDir takes an exclusive, non-blocking lock on dir/LOCK so that two
// members never share a Dir: raft-wal's metadata database would otherwise
// wait forever for the other's lock. The lock dies with the process.
func lockDir(dir string) (*os.File, error) {
	name := filepath.Join(dir, "LOCK")
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", name, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("lock %s: directory in use by another member", name)
		}
		return nil, fmt.Errorf("lock %s: %w", name, err)
	}
	return f, nil
}

// unlockDir releases lockDir's lock.
func unlockDir(f *os.File) error { return f.Close() }
