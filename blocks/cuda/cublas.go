package cuda

import (
	"fmt"
	"sync"
	"unsafe"
)

// cublas is NVIDIA's BLAS (cublas_api.h), the subset the engine uses:
// mixed-precision GEMM. Functions return a cublasStatus_t (0 =
// CUBLAS_STATUS_SUCCESS).
type cublas struct {
	lib *library

	cublasCreate          func(h *uintptr) int32
	cublasDestroy         func(h uintptr) int32
	cublasSetStream       func(h uintptr, stream uintptr) int32
	cublasGetStatusString func(s int32) *byte
	// cublasGemmEx: C = alpha*op(A)*op(B) + beta*C, column-major; alpha
	// and beta point at host values of the compute type.
	cublasGemmEx func(h uintptr, transA, transB int32, m, n, k int32, alpha unsafe.Pointer,
		a uint64, aType int32, lda int32, b uint64, bType int32, ldb int32, beta unsafe.Pointer,
		c uint64, cType int32, ldc int32, computeType int32, algo int32) int32
}

// cuBLAS and CUDA library enums (cublas_api.h, library_types.h).
const (
	cublasOpN = 0
	cublasOpT = 1

	cudaR32F = 0 // CUDA_R_32F
	cudaR16F = 2 // CUDA_R_16F

	cublasCompute32F   = 68 // CUBLAS_COMPUTE_32F (CUDA >= 11)
	cublasGemmDefault  = -1 // CUBLAS_GEMM_DEFAULT (tensor cores where the types allow)
	cublasStatusNoInit = 1  // CUBLAS_STATUS_NOT_INITIALIZED
)

var (
	cublasOnce sync.Once
	cublasInst *cublas
	cublasErr  error
)

// loadCuBLAS opens cuBLAS once per process; errors wrap ErrUnavailable.
func loadCuBLAS() (*cublas, error) {
	cublasOnce.Do(func() {
		lib, err := open(cublasLib)
		if err != nil {
			cublasErr = err
			return
		}
		b := &cublas{lib: lib}
		cublasErr = lib.bind(map[string]any{
			"cublasCreate_v2":       &b.cublasCreate,
			"cublasDestroy_v2":      &b.cublasDestroy,
			"cublasSetStream_v2":    &b.cublasSetStream,
			"cublasGetStatusString": &b.cublasGetStatusString,
			"cublasGemmEx":          &b.cublasGemmEx,
		})
		if cublasErr == nil {
			cublasInst = b
		}
	})
	return cublasInst, cublasErr
}

// check turns the status of op into an error naming it (nil on success).
func (b *cublas) check(op string, s int32) error {
	if s == 0 {
		return nil
	}
	name := "unknown status"
	if p := b.cublasGetStatusString(s); p != nil {
		name = goString(p)
	}
	return fmt.Errorf("cuda: %s: %s (%d)", op, name, s)
}

// gemm computes out [n, rows] (float32, row-major) = x [n, cols] (fp16,
// row-major) times w [rows, cols]^T (fp16, row-major: one weight row per
// output), float32 accumulation: out[t*rows + r] = w[r] · x[t], as the CPU
// engine's mulRows. In cuBLAS's column-major terms w is a cols x rows
// matrix (lda = cols) used transposed, x a cols x n matrix, out rows x n.
func (b *cublas) gemm(h uintptr, out, w, x uint64, rows, cols, n int) error {
	alpha, beta := float32(1), float32(0)
	return b.check("cublasGemmEx", b.cublasGemmEx(h, cublasOpT, cublasOpN, int32(rows), int32(n), int32(cols),
		unsafe.Pointer(&alpha), w, cudaR16F, int32(cols), x, cudaR16F, int32(cols),
		unsafe.Pointer(&beta), out, cudaR32F, int32(rows), cublasCompute32F, cublasGemmDefault))
}
