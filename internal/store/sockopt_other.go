//go:build !linux

package store

import (
	"syscall"
	"time"
)

// tcpUserTimeoutControl is a no-op where TCP_USER_TIMEOUT does not exist.
func tcpUserTimeoutControl(time.Duration) func(network, address string, c syscall.RawConn) error {
	return nil
}
