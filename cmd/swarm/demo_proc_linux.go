package main

import "syscall"

// childSysProcAttr puts a demo server in its own process group (so a
// terminal's Ctrl-C reaches only the demo, which stops the servers in order)
// and has the kernel SIGKILL it if the demo dies (the parent-death signal,
// tied to the thread that started it: see demoFleet).
func childSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
