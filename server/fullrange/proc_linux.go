package fullrange

import "syscall"

// childAttr puts the engine in its own process group (so that Close stops
// its children too) and has the kernel kill it if this process dies.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
