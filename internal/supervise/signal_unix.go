//go:build unix

package supervise

import (
	"os"
	"syscall"
)

// resume sends SIGCONT, so that a stopped child runs and sees SIGTERM.
func resume(p *os.Process) { _ = p.Signal(syscall.SIGCONT) }
