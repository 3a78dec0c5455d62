//go:build !linux

package cuda

import (
	"fmt"
	"runtime"
)

// library is one opened shared library; none opens off Linux.
type library struct {
	spec libSpec
	path string
}

// open fails: the backend runs on Linux only.
func open(spec libSpec) (*library, error) {
	return nil, fmt.Errorf("%w: %s: the CUDA backend runs on linux, not %s", ErrUnavailable, spec.what, runtime.GOOS)
}

// bind is never reached off Linux.
func (l *library) bind(map[string]any) error {
	_, err := open(l.spec)
	return err
}
