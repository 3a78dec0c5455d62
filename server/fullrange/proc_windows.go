package fullrange

import (
	"os"
	"syscall"
)

// childAttr is the default on Windows: no process groups or signals, so
// Close stops the engine process itself, not processes it started.
func childAttr() *syscall.SysProcAttr { return nil }

// terminateGroup ends the engine: Windows has no SIGTERM, so it is killed
// at once (an engine that needs a graceful stop must be stopped by the
// operator first).
func terminateGroup(p *os.Process) { _ = p.Kill() }

// killGroup ends the engine.
func killGroup(p *os.Process) { _ = p.Kill() }
