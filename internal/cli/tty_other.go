//go:build !linux

package cli

import "os"

// isTTY reports whether f is a character device, the portable approximation of a
// terminal (the packaged queenctl is Linux-only and uses TCGETS instead).
func isTTY(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
