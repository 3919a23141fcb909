//go:build !linux

package proxytest

import "syscall"

// childAttr: no parent-death signal outside Linux; the cleanups kill the child.
func childAttr() *syscall.SysProcAttr { return nil }
