//go:build unix

package fullrange

import (
	"os"
	"syscall"
)

// terminateGroup sends SIGTERM to the engine's process group (childAttr
// made the engine its leader), so that its own children stop too.
func terminateGroup(p *os.Process) { _ = syscall.Kill(-p.Pid, syscall.SIGTERM) }

// killGroup sends SIGKILL to the engine's process group.
func killGroup(p *os.Process) { _ = syscall.Kill(-p.Pid, syscall.SIGKILL) }
