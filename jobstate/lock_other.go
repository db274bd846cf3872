//go:build !unix

package jobstate

import "os"

// lockDir is a no-op where flock is not available.
func lockDir(string) (*os.File, error) { return nil, nil }

func unlockDir(*os.File) error { return nil }
