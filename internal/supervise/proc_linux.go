package supervise

import "syscall"

// childSysProcAttr puts a child in its own process group (so a terminal's
// Ctrl-C reaches only the parent, which stops the children in order) and
// has the kernel SIGKILL it if the parent dies (the parent-death signal,
// tied to the thread that started it: see Group).
func childSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
