//go:build !unix

package supervise

import "os"

// resume does nothing where processes cannot be stopped by a signal.
func resume(*os.Process) {}
