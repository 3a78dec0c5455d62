//go:build !purego

package cuda

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/x448/float16"
)

// The kernels of kernels.cu run on the CPU (testdata/host_shim.h: each
// launch's blocks in turn, a block's threads as fibers that all reach a
// barrier before any passes it) and are checked against the arithmetic of the CPU engine,
// written out here. This catches indexing and arithmetic mistakes without
// a GPU; it says nothing of speed or of the PTX the GPU runs.

var (
	emuOnce sync.Once
	emuPath string
	emuErr  error
)

// emulator builds testdata/host_main.cc with kernels.cu once per test
// binary, or skips when there is no C++ compiler.
func emulator(t *testing.T) string {
	t.Helper()
	cxx, err := exec.LookPath("g++")
	if err != nil {
		t.Skip("the kernels' host emulation needs g++ (CI has it): " + err.Error())
	}
	emuOnce.Do(func() {
		dir, err := os.MkdirTemp("", "swarm-cuda-emu")
		if err != nil {
			emuErr = err
			return
		}
		emuPath = filepath.Join(dir, "emu")
		out, err := exec.Command(cxx, "-std=c++20", "-O1", "-DSWARM_HOST_EMULATION",
			"-include", "testdata/host_shim.h", "-x", "c++", "kernels.cu", "-x", "none", "testdata/host_main.cc",
			"-o", emuPath).CombinedOutput()
		if err != nil {
			emuErr = fmt.Errorf("g++: %w\n%s", err, out)
		}
	})
	require.NoError(t, emuErr)
	return emuPath
}

// alias is a kernel argument naming an earlier one's buffer.
type alias int

// launch runs kernel on grid x block threads with args: *[]float32 and
// *[]uint16 buffers (read back after the run), alias, nil (NULL), int and
// float32.
func launchHost(t *testing.T, kernel string, grid, block int, args ...any) {
	t.Helper()
	emu := emulator(t)
	dir := t.TempDir()
	lines := []string{fmt.Sprintf("kernel %s %d %d", kernel, grid, block)}
	type back struct {
		path string
		arg  any
	}
	var backs []back
	fileOf := map[int]int{} // argument -> file id
	var argLines []string
	for i, a := range args {
		switch v := a.(type) {
		case *[]float32, *[]uint16:
			p := filepath.Join(dir, fmt.Sprintf("arg%d", i))
			f, err := os.Create(p)
			require.NoError(t, err)
			require.NoError(t, binary.Write(f, binary.LittleEndian, reflectSlice(v)))
			require.NoError(t, f.Close())
			fileOf[i] = len(backs)
			lines = append(lines, fmt.Sprintf("file %d %s", len(backs), p))
			argLines = append(argLines, fmt.Sprintf("ptr %d 0", len(backs)))
			backs = append(backs, back{p, v})
		case alias:
			argLines = append(argLines, fmt.Sprintf("ptr %d 0", fileOf[int(v)]))
		case nil:
			argLines = append(argLines, "null")
		case int:
			argLines = append(argLines, fmt.Sprintf("int %d", v))
		case float32:
			argLines = append(argLines, fmt.Sprintf("float %.9g", v))
		default:
			t.Fatalf("argument %d: %T", i, a)
		}
	}
	lines = append(lines, argLines...)
	jobPath := filepath.Join(dir, "job")
	require.NoError(t, os.WriteFile(jobPath, []byte(strings.Join(lines, "\n")+"\n"), 0o644))
	out, err := exec.Command(emu, jobPath).CombinedOutput()
	require.NoError(t, err, "%s", out)
	for _, b := range backs {
		raw, err := os.ReadFile(b.path)
		require.NoError(t, err)
		switch v := b.arg.(type) {
		case *[]float32:
			for i := range *v {
				(*v)[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
			}
		case *[]uint16:
			for i := range *v {
				(*v)[i] = binary.LittleEndian.Uint16(raw[2*i:])
			}
		}
	}
}

func reflectSlice(v any) any {
	switch s := v.(type) {
	case *[]float32:
		return *s
	case *[]uint16:
		return *s
	}
	return nil
}

func randn(rng *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	return x
}

func h2f(h uint16) float32 { return float16.Frombits(h).Float32() }
func f2h(f float32) uint16 { return float16.Fromfloat32(f).Bits() }

// relClose requires got within rel of want, relative to want's largest
// magnitude.
func relClose(t *testing.T, want, got []float32, rel float64, msg string) {
	t.Helper()
	require.Len(t, got, len(want))
	scale := 0.0
	for _, w := range want {
		scale = max(scale, math.Abs(float64(w)))
	}
	for i := range want {
		require.InDelta(t, want[i], got[i], rel*scale, "%s: element %d", msg, i)
	}
}

// rmsnorm over rows wider and narrower than the block (and wider than one
// batch of 8 loads per thread), to float32 (in place too) and to binary16:
// w * (x / sqrt(mean(x^2) + eps)).
func TestHostRMSNorm(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, cols := range []int{300, 64, 2500} {
		rows := 3
		x, w := randn(rng, rows*cols), randn(rng, cols)
		want := make([]float32, rows*cols)
		for r := range rows {
			var ss float64
			for _, v := range x[r*cols : (r+1)*cols] {
				ss += float64(v) * float64(v)
			}
			s := 1 / math.Sqrt(ss/float64(cols)+1e-5)
			for i := range cols {
				want[r*cols+i] = w[i] * float32(s*float64(x[r*cols+i]))
			}
		}
		out, outh := make([]float32, rows*cols), make([]uint16, rows*cols)
		launchHost(t, "rmsnorm", rows, 256, &out, &outh, &x, &w, cols, float32(1e-5))
		relClose(t, want, out, 1e-6, fmt.Sprintf("cols %d", cols))
		for i := range want {
			require.Equal(t, f2h(out[i]), outh[i], "binary16 of element %d", i)
		}
		inPlace := append([]float32(nil), x...)
		launchHost(t, "rmsnorm", rows, 256, &inPlace, nil, alias(0), &w, cols, float32(1e-5))
		require.Equal(t, out, inPlace, "in place")
	}
}

// RoPE rotates adjacent pairs by each row's angles, exactly as the CPU's
// (*rope).apply computes in float32.
func TestHostRoPE(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const nRows, nHeads, hd = 3, 2, 8
	x, cos, sin := randn(rng, nRows*nHeads*hd), randn(rng, nRows*hd/2), randn(rng, nRows*hd/2)
	want := append([]float32(nil), x...)
	for t := range nRows {
		for h := range nHeads {
			v := want[(t*nHeads+h)*hd : (t*nHeads+h+1)*hd]
			for i := range hd / 2 {
				c, s := cos[t*hd/2+i], sin[t*hd/2+i]
				v0, v1 := v[2*i], v[2*i+1]
				v[2*i] = v0*c - v1*s
				v[2*i+1] = v0*s + v1*c
			}
		}
	}
	launchHost(t, "rope", 1, 256, &x, &cos, &sin, nHeads, hd, nRows)
	require.Equal(t, want, x)
}

// store_kv then attention: grouped-query heads, a ring cache that has
// wrapped, a sliding window and a full cache, checked against attention
// written out in float64 over the binary16-rounded keys and values.
func TestHostAttention(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	const nh, nkv, hd = 4, 2, 16
	const kvDim, qDim = nkv * hd, nh * hd
	for _, c := range []struct {
		name         string
		window, ring int
	}{{"full", 0, 0}, {"sliding ring", 4, 6}, {"sliding full cache", 4, 0}} {
		t.Run(c.name, func(t *testing.T) {
			const total = 8 // positions 0..4, then a step of 3 at 5..7
			k, v := randn(rng, total*kvDim), randn(rng, total*kvDim)
			rows := total
			if c.ring > 0 {
				rows = c.ring
			}
			kc, vc := make([]uint16, rows*kvDim), make([]uint16, rows*kvDim)
			first, firstV := k[:5*kvDim], v[:5*kvDim]
			launchHost(t, "store_kv", 1, 256, &first, &firstV, kvDim, 5, 1, &kc, &vc, 0, 0, 5, c.ring)
			step, stepV := k[5*kvDim:], v[5*kvDim:]
			launchHost(t, "store_kv", 1, 256, &step, &stepV, kvDim, 3, 1, &kc, &vc, 5, 0, 3, c.ring)
			// The cache holds every position still in the ring, rounded.
			for p := max(0, total-rows); p < total; p++ {
				r := p
				if c.ring > 0 {
					r = p % c.ring
				}
				for i := range kvDim {
					require.Equal(t, f2h(k[p*kvDim+i]), kc[r*kvDim+i], "key of position %d", p)
					require.Equal(t, f2h(v[p*kvDim+i]), vc[r*kvDim+i], "value of position %d", p)
				}
			}

			const pos, n = 5, 3
			scale := float32(math.Sqrt(hd))
			q := randn(rng, n*qDim)
			out, scores := make([]float32, n*qDim), make([]float32, n*nh*(pos+n))
			launchHost(t, "attention", n*nh, 128, &out, &q, &scores, nh, nkv, hd, n, c.window, scale, pos+n, nil, 1, &kc, &vc, pos, 0, n, c.ring)
			want := make([]float32, n*qDim)
			for tt := range n {
				p := pos + tt
				lo := 0
				if c.window > 0 {
					lo = max(0, p-c.window+1)
				}
				for h := range nh {
					off := (h / (nh / nkv)) * hd
					sc := make([]float64, p+1-lo)
					m := math.Inf(-1)
					for j := lo; j <= p; j++ {
						var dot float64
						for d := range hd {
							dot += float64(q[(tt*nh+h)*hd+d]) * float64(h2f(f2h(k[j*kvDim+off+d])))
						}
						sc[j-lo] = dot / float64(scale)
						m = max(m, sc[j-lo])
					}
					var sum float64
					for i := range sc {
						sc[i] = math.Exp(sc[i] - m)
						sum += sc[i]
					}
					for d := range hd {
						var acc float64
						for j := lo; j <= p; j++ {
							acc += sc[j-lo] / sum * float64(h2f(f2h(v[j*kvDim+off+d])))
						}
						want[(tt*nh+h)*hd+d] = float32(acc)
					}
				}
			}
			relClose(t, want, out, 1e-5, c.name)
		})
	}
}

// One store_kv and one attention launch over the segments of several
// sessions (different caches, positions and lengths, a ring that wraps
// within the pass) give every row and cache bit for bit what one launch
// per session gives: batched decoding keeps a session's results exact.
func TestHostAttentionSegments(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	const nh, nkv, hd = 4, 2, 16
	const kvDim, qDim = nkv * hd, nh * hd
	type sess struct {
		pos, n, ring int
		kc, vc       []uint16
	}
	for _, window := range []int{0, 4} {
		t.Run(fmt.Sprintf("window%d", window), func(t *testing.T) {
			ss := []sess{{pos: 0, n: 3}, {pos: 6, n: 1}, {pos: 3, n: 2}, {pos: 9, n: 1}}
			if window > 0 {
				ss[1].ring, ss[2].ring = 5, 4 // session 2's rows wrap its ring of 4
			}
			rows, ctx := 0, 0
			for i := range ss {
				cr := ss[i].pos + ss[i].n
				if ss[i].ring > 0 {
					cr = ss[i].ring
				}
				// Earlier positions: random binary16 keys and values.
				ss[i].kc, ss[i].vc = halves(rng, cr*kvDim), halves(rng, cr*kvDim)
				rows += ss[i].n
				ctx = max(ctx, ss[i].pos+ss[i].n)
			}
			k, v, q := randn(rng, rows*kvDim), randn(rng, rows*kvDim), randn(rng, rows*qDim)
			scale := float32(math.Sqrt(hd))

			// One launch per session.
			var alone []float32
			aloneK, aloneV := make([][]uint16, len(ss)), make([][]uint16, len(ss))
			off := 0
			for i, s := range ss {
				kc, vc := slices.Clone(s.kc), slices.Clone(s.vc)
				ks, vs := k[off*kvDim:(off+s.n)*kvDim], v[off*kvDim:(off+s.n)*kvDim]
				launchHost(t, "store_kv", 1, 256, &ks, &vs, kvDim, s.n, 1, &kc, &vc, s.pos, 0, s.n, s.ring)
				qs := q[off*qDim : (off+s.n)*qDim]
				out, scores := make([]float32, s.n*qDim), make([]float32, s.n*nh*ctx)
				launchHost(t, "attention", s.n*nh, 128, &out, &qs, &scores, nh, nkv, hd, s.n, window, scale, ctx, nil,
					1, &kc, &vc, s.pos, 0, s.n, s.ring)
				alone = append(alone, out...)
				aloneK[i], aloneV[i] = kc, vc
				off += s.n
			}

			// One launch for the pass.
			kcs, vcs := make([][]uint16, len(ss)), make([][]uint16, len(ss))
			table := []any{len(ss)}
			off = 0
			for i, s := range ss {
				kcs[i], vcs[i] = slices.Clone(s.kc), slices.Clone(s.vc)
				table = append(table, &kcs[i], &vcs[i], s.pos, off, s.n, s.ring)
				off += s.n
			}
			launchHost(t, "store_kv", 2, 256, append([]any{&k, &v, kvDim, rows}, table...)...)
			out, scores := make([]float32, rows*qDim), make([]float32, rows*nh*ctx)
			launchHost(t, "attention", rows*nh, 128, append([]any{&out, &q, &scores, nh, nkv, hd, rows, window, scale, ctx, nil}, table...)...)
			for i := range ss {
				require.Equal(t, aloneK[i], kcs[i], "session %d: keys", i)
				require.Equal(t, aloneV[i], vcs[i], "session %d: values", i)
			}
			require.Equal(t, alone, out)
		})
	}
}

// The gated activations to binary16: SwiGLU and tanh-GELU GeGLU.
func TestHostGLU(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	const total = 1000
	g, u := randn(rng, total), randn(rng, total)
	for act, f := range []func(x float64) float64{
		func(x float64) float64 { return x / (1 + math.Exp(-x)) },
		func(x float64) float64 { return 0.5 * x * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(x+0.044715*x*x*x))) },
	} {
		out := make([]uint16, total)
		launchHost(t, "glu", 2, 256, &out, &g, &u, total, act)
		for i := range total {
			want := f(float64(g[i])) * float64(u[i])
			require.InDelta(t, want, float64(h2f(out[i])), 1e-3*math.Max(1, math.Abs(want)), "act %d element %d", act, i)
		}
	}
}

// The element-wise kernels, exactly.
func TestHostElementwise(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	const cols, rows = 7, 5
	x, b, y := randn(rng, rows*cols), randn(rng, cols), randn(rng, rows*cols)
	want := make([]float32, rows*cols)
	for i := range want {
		want[i] = x[i] + b[i%cols]
	}
	got := append([]float32(nil), x...)
	launchHost(t, "add_bias", 1, 256, &got, &b, cols, rows*cols)
	require.Equal(t, want, got)

	for i := range want {
		want[i] = x[i] + y[i]
	}
	got = append([]float32(nil), x...)
	launchHost(t, "add", 1, 256, &got, &y, rows*cols)
	require.Equal(t, want, got)

	h := make([]uint16, rows*cols)
	launchHost(t, "to_f16", 1, 256, &h, &x, rows*cols)
	back := make([]float32, rows*cols)
	launchHost(t, "f16_to_f32", 1, 256, &back, &h, rows*cols)
	for i := range x {
		require.Equal(t, f2h(x[i]), h[i], "element %d", i)
		require.Equal(t, h2f(h[i]), back[i], "element %d", i)
	}
}
