package store

import (
	"syscall"
	"time"
)

// tcpUserTimeoutControl sets TCP_USER_TIMEOUT on TCP sockets (Linux).
func tcpUserTimeoutControl(d time.Duration) func(network, address string, c syscall.RawConn) error {
	if d <= 0 {
		return nil
	}
	return func(network, _ string, c syscall.RawConn) error {
		if network != "tcp" && network != "tcp4" && network != "tcp6" {
			return nil
		}
		var sockErr error
		err := c.Control(func(fd uintptr) {
			sockErr = syscall.SetsockoptInt(int(fd), syscall.IPPROTO_TCP, 0x12 /* TCP_USER_TIMEOUT */, int(d.Milliseconds()))
		})
		if err != nil {
			return err
		}
		return sockErr
	}
}
