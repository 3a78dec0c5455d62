//go:build !unix

package churn

import "syscall"

// signals is nil where servers cannot be stopped and resumed by signals:
// Validate refuses to run.
var (
	signals map[string]syscall.Signal
	sigCont syscall.Signal
)
