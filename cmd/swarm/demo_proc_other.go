//go:build !linux

package main

import "syscall"

// childSysProcAttr is the default elsewhere: without a parent-death signal
// the demo stops its servers itself (also on Ctrl-C), but a demo killed with
// SIGKILL leaves them running.
func childSysProcAttr() *syscall.SysProcAttr { return nil }
