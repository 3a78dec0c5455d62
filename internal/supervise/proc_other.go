//go:build !linux

package supervise

import "syscall"

// childSysProcAttr is the default elsewhere: without a parent-death signal
// the parent stops its children itself (also on Ctrl-C), but a parent
// killed with SIGKILL leaves them running.
func childSysProcAttr() *syscall.SysProcAttr { return nil }
