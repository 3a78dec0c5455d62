//go:build unix

package churn

import "syscall"

// signals are the disruptions' signals by kind, and the one that resumes
// a stopped server.
var (
	signals = map[string]syscall.Signal{KindKill: syscall.SIGKILL, KindStop: syscall.SIGSTOP, KindTerm: syscall.SIGTERM}
	sigCont = syscall.SIGCONT
)
