package bench

import "syscall"

// childAttr makes the broker die with the bench, even if the bench is killed.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
