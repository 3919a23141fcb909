//go:build unix

package spool

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// lockDir takes an exclusive, non-blocking flock on path. The lock lives as long as
// the returned file stays open (and dies with the process), so a crashed broker never
// leaves the directory locked.
func lockDir(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, ErrLocked
		}
		return nil, fmt.Errorf("flock %s: %w", path, err)
	}
	return f, nil
}

// unlockDir releases the lock and closes f. The explicit LOCK_UN matters: the lock
// belongs to the open file, which a child process forked at that moment (any exec by
// this process) shares until its exec closes it, so a close alone could leave the
// directory locked for a moment after this spool is gone.
func unlockDir(f *os.File) error {
	_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return f.Close()
}
