package flops

// Kernel names one multiply-add loop.
type Kernel string

// The loops, widest first.
const (
	// KernelAVX512 runs 12 independent 16-lane VFMADD231PS chains.
	KernelAVX512 Kernel = "avx512"
	// KernelAVX2 runs 12 independent 8-lane VFMADD231PS chains.
	KernelAVX2 Kernel = "avx2"
	// KernelGo runs 8 independent scalar float32 chains.
	KernelGo Kernel = "go"
)

// loop runs iters iterations of a kernel's body and returns a value that
// depends on every multiply-add (so none can be dropped).
type loop struct {
	run func(iters int) float32
	// flopsPerIter is the float32 operations of one iteration (2 per
	// multiply-add lane).
	flopsPerIter int
}

// kernels maps each kernel available on this CPU and build to its loop.
var kernels = map[Kernel]loop{KernelGo: {run: fmaGo, flopsPerIter: 8 * 2 * 4}}

// Available lists the kernels this CPU and build can run, widest first;
// KernelGo is always last.
func Available() []Kernel {
	var out []Kernel
	for _, k := range []Kernel{KernelAVX512, KernelAVX2, KernelGo} {
		if _, ok := kernels[k]; ok {
			out = append(out, k)
		}
	}
	return out
}

// Best returns the widest kernel available, the one Measure uses by
// default.
func Best() Kernel { return Available()[0] }

// fmaGo is the portable loop: 8 chains, 4 multiply-adds each per
// iteration. Go does not fuse them, so this is 2 float32 ops each.
func fmaGo(iters int) float32 {
	a0, a1, a2, a3 := float32(0), float32(0.1), float32(0.2), float32(0.3)
	a4, a5, a6, a7 := float32(0.4), float32(0.5), float32(0.6), float32(0.7)
	const m, c = float32(0.999999), float32(1e-7)
	for range iters {
		for range 4 {
			a0, a1, a2, a3 = a0*m+c, a1*m+c, a2*m+c, a3*m+c
			a4, a5, a6, a7 = a4*m+c, a5*m+c, a6*m+c, a7*m+c
		}
	}
	return a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7
}
