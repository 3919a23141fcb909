//go:build !unix

package spool

import "os"

// lockDir opens the lock file; without flock the one-process-per-directory rule is
// the operator's to keep.
func lockDir(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
}

// unlockDir closes the lock file.
func unlockDir(f *os.File) error { return f.Close() }
