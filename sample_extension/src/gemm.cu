// Register-blocked tiled SGEMM.
//
// Each block computes a BM x BN tile of C, staging BK-deep slices of A and B
// in shared memory; each thread accumulates a TM x TN micro-tile in registers
// (TM * TN accumulators plus TM + TN operand registers). That register
// pressure is what the compiler settings trade against occupancy and spills:
// -maxrregcount, --register-usage-level and ptxas options change this kernel
// visibly. The tile sizes are source parameters (-DCIQ_GEMM_BM=... etc.),
// searched by ciq_build through PARAMS.

#include "gemm.h"

#include <cstdio>

#ifndef CIQ_GEMM_BM
#define CIQ_GEMM_BM 128
#endif
#ifndef CIQ_GEMM_BN
#define CIQ_GEMM_BN 128
#endif
#ifndef CIQ_GEMM_BK
#define CIQ_GEMM_BK 8
#endif
#ifndef CIQ_GEMM_TM
#define CIQ_GEMM_TM 8
#endif
#ifndef CIQ_GEMM_TN
#define CIQ_GEMM_TN 8
#endif

namespace {

constexpr int kBM = CIQ_GEMM_BM;
constexpr int kBN = CIQ_GEMM_BN;
constexpr int kBK = CIQ_GEMM_BK;
constexpr int kTM = CIQ_GEMM_TM;
constexpr int kTN = CIQ_GEMM_TN;
constexpr int kThreadsN = kBN / kTN;            // threads along a tile row
constexpr int kThreads = (kBM / kTM) * kThreadsN;

static_assert(kBM % kTM == 0 && kBN % kTN == 0, "tile must be a multiple of the micro-tile");
static_assert(kThreads >= 32 && kThreads <= 1024, "threads per block must be in [32, 1024]");
static_assert((kBM * kBK) % kThreads == 0, "A tile must split evenly over the threads");
static_assert((kBK * kBN) % kThreads == 0, "B tile must split evenly over the threads");

// No __launch_bounds__: nvcc ignores -maxrregcount for kernels that have
// one, and the register budget is exactly what the search should control.
__global__ void sgemm_kernel(int m, int n, int k, float alpha, const float* __restrict__ a,
             const float* __restrict__ b, float beta, float* __restrict__ c) {
    // A is stored transposed so that a thread's TM operands are contiguous.
    __shared__ float as[kBK][kBM];
    __shared__ float bs[kBK][kBN];

    const int tid = threadIdx.x;
    const int thread_row = tid / kThreadsN;
    const int thread_col = tid % kThreadsN;
    const int row0 = blockIdx.y * kBM;
    const int col0 = blockIdx.x * kBN;

    float acc[kTM][kTN];
#pragma unroll
    for (int i = 0; i < kTM; ++i)
#pragma unroll
        for (int j = 0; j < kTN; ++j) acc[i][j] = 0.0f;

    float ra[kTM];
    float rb[kTN];

    for (int k0 = 0; k0 < k; k0 += kBK) {
#pragma unroll
        for (int e = tid; e < kBM * kBK; e += kThreads) {
            const int r = e / kBK, cc = e % kBK;
            const int gr = row0 + r, gc = k0 + cc;
            as[cc][r] = (gr < m && gc < k) ? a[static_cast<size_t>(gr) * k + gc] : 0.0f;
        }
#pragma unroll
        for (int e = tid; e < kBK * kBN; e += kThreads) {
            const int r = e / kBN, cc = e % kBN;
            const int gr = k0 + r, gc = col0 + cc;
            bs[r][cc] = (gr < k && gc < n) ? b[static_cast<size_t>(gr) * n + gc] : 0.0f;
        }
        __syncthreads();

#pragma unroll
        for (int kk = 0; kk < kBK; ++kk) {
#pragma unroll
            for (int i = 0; i < kTM; ++i) ra[i] = as[kk][thread_row * kTM + i];
#pragma unroll
            for (int j = 0; j < kTN; ++j) rb[j] = bs[kk][thread_col * kTN + j];
#pragma unroll
            for (int i = 0; i < kTM; ++i)
#pragma unroll
                for (int j = 0; j < kTN; ++j) acc[i][j] = fmaf(ra[i], rb[j], acc[i][j]);
        }
        __syncthreads();
    }

#pragma unroll
    for (int i = 0; i < kTM; ++i) {
        const int r = row0 + thread_row * kTM + i;
        if (r >= m) continue;
#pragma unroll
        for (int j = 0; j < kTN; ++j) {
            const int cc = col0 + thread_col * kTN + j;
            if (cc >= n) continue;
            float* out = c + static_cast<size_t>(r) * n + cc;
            // beta == 0 must not read C (it may hold NaN poison).
            *out = beta == 0.0f ? alpha * acc[i][j] : fmaf(alpha, acc[i][j], beta * *out);
        }
    }
}

void set_error(char* error, std::size_t size, const char* what, cudaError_t status) {
    if (error != nullptr && size > 0) {
        std::snprintf(error, size, "%s: %s (%s)", what, cudaGetErrorString(status),
                      cudaGetErrorName(status));
    }
}

}  // namespace

CiqGemmConfig ciq_gemm_config() { return {kBM, kBN, kBK, kTM, kTN, kThreads}; }

cudaError_t ciq_sgemm(int m, int n, int k, float alpha, const float* a,
                      const float* b, float beta, float* c,
                      cudaStream_t stream) {
    if (m <= 0 || n <= 0 || k <= 0) return cudaErrorInvalidValue;
    const dim3 grid((n + kBN - 1) / kBN, (m + kBM - 1) / kBM);
    sgemm_kernel<<<grid, kThreads, 0, stream>>>(m, n, k, alpha, a, b, beta, c);
    return cudaGetLastError();
}

cudaError_t ciq_sgemm_host(int m, int n, int k, const float* a, const float* b,
                           float* c, char* error, std::size_t error_size) {
    const size_t a_bytes = sizeof(float) * static_cast<size_t>(m) * k;
    const size_t b_bytes = sizeof(float) * static_cast<size_t>(k) * n;
    const size_t c_bytes = sizeof(float) * static_cast<size_t>(m) * n;
    float *da = nullptr, *db = nullptr, *dc = nullptr;
    cudaError_t status = cudaSuccess;
    const char* step = "";

    // Each step runs only while everything before it succeeded.
    if (status == cudaSuccess) { step = "cudaMalloc(A)"; status = cudaMalloc(&da, a_bytes); }
    if (status == cudaSuccess) { step = "cudaMalloc(B)"; status = cudaMalloc(&db, b_bytes); }
    if (status == cudaSuccess) { step = "cudaMalloc(C)"; status = cudaMalloc(&dc, c_bytes); }
    if (status == cudaSuccess) { step = "copy A"; status = cudaMemcpy(da, a, a_bytes, cudaMemcpyHostToDevice); }
    if (status == cudaSuccess) { step = "copy B"; status = cudaMemcpy(db, b, b_bytes, cudaMemcpyHostToDevice); }
    if (status == cudaSuccess) { step = "sgemm launch"; status = ciq_sgemm(m, n, k, 1.0f, da, db, 0.0f, dc, 0); }
    if (status == cudaSuccess) { step = "sgemm"; status = cudaDeviceSynchronize(); }
    if (status == cudaSuccess) { step = "copy C"; status = cudaMemcpy(c, dc, c_bytes, cudaMemcpyDeviceToHost); }
    if (status != cudaSuccess) set_error(error, error_size, step, status);

    // Free errors are secondary to the first failure; report them only alone.
    for (float* p : {da, db, dc}) {
        if (p == nullptr) continue;
        const cudaError_t freed = cudaFree(p);
        if (status == cudaSuccess && freed != cudaSuccess) {
            status = freed;
            set_error(error, error_size, "cudaFree", freed);
        }
    }
    return status;
}

// C interface (kernels_c.h) for the Python extension.
#include "kernels_c.h"

extern "C" int sample_gemm_host(int m, int n, int k, const float* a, const float* b, float* c,
                                char* error, size_t error_size) {
    return static_cast<int>(ciq_sgemm_host(m, n, k, a, b, c, error, error_size));
}

extern "C" void sample_gemm_params(int values[5]) {
    const CiqGemmConfig config = ciq_gemm_config();
    values[0] = config.bm;
    values[1] = config.bn;
    values[2] = config.bk;
    values[3] = config.tm;
    values[4] = config.tn;
}
