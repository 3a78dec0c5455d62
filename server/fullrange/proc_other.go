//go:build unix && !linux

package fullrange

import "syscall"

// childAttr puts the engine in its own process group (so that Close stops
// its children too).
func childAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
