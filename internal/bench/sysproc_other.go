//go:build !linux

package bench

import "syscall"

// childAttr: no parent-death signal outside Linux (the bench reads /proc anyway).
func childAttr() *syscall.SysProcAttr { return nil }
