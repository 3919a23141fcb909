package proxytest

import "syscall"

// childAttr makes a child proxy die with the test binary, even when it is killed
// before its cleanups run.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
