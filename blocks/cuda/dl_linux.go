//go:build linux

package cuda

import (
	"fmt"
	"os"

	"github.com/ebitengine/purego"
)

// library is one opened shared library.
type library struct {
	spec   libSpec
	path   string
	handle uintptr
}

// open opens the first candidate of spec that loads. When none does, the
// error quotes the loader's reason for the first file that was found but
// would not load (a wrong architecture, a missing dependency), else its
// reason for the last name tried.
func open(spec libSpec) (*library, error) {
	var found, last error
	for _, p := range spec.candidates() {
		h, err := purego.Dlopen(p, purego.RTLD_NOW|purego.RTLD_GLOBAL)
		if err == nil {
			return &library{spec: spec, path: p, handle: h}, nil
		}
		if _, serr := os.Stat(p); serr == nil && found == nil {
			found = err
		}
		last = err
	}
	if found != nil {
		last = found
	}
	return nil, spec.openError(last)
}

// bind points each function variable at the symbol of its name, after
// checking that every symbol exists (purego.RegisterLibFunc would panic).
func (l *library) bind(fns map[string]any) error {
	for name, fp := range fns {
		sym, err := purego.Dlsym(l.handle, name)
		if err != nil || sym == 0 {
			return fmt.Errorf("%w: %s (%s) has no symbol %s: %v", ErrUnavailable, l.spec.what, l.path, name, err)
		}
		purego.RegisterFunc(fp, sym)
	}
	return nil
}
