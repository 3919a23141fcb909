package spool

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// CheckDir reports what makes dir unusable as a spool directory before anything is
// created: dir itself, or the nearest of its parents that exists, is not a directory.
// It creates nothing, so `queen -check-config` can ask it too. A permission problem is
// left to Open, as the broker may run as another user than the check.
func CheckDir(dir string) error {
	if dir == "" {
		return errors.New("no directory")
	}
	clean := filepath.Clean(dir)
	for p := clean; ; {
		info, err := os.Stat(p)
		switch {
		case err == nil && info.IsDir():
			return nil
		case err == nil && p == clean:
			return fmt.Errorf("%s exists and is not a directory", p)
		case err == nil:
			return fmt.Errorf("%s is not a directory, so %s cannot be created under it", p, dir)
		case !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR):
			return nil // unreadable: Open reports it with its cause
		}
		// Missing, or a path through a file (ENOTDIR): look at the parent.
		parent := filepath.Dir(p)
		if parent == p {
			return nil
		}
		p = parent
	}
}
