// Register-blocked tiled SGEMM: C = alpha * A * B + beta * C (row-major).
#pragma once

#include <cstddef>
#include <cuda_runtime.h>

// The tile sizes this library was compiled with (from -DCIQ_GEMM_* or the
// defaults), so callers can see which pinned parameters took effect.
struct CiqGemmConfig {
    int bm, bn, bk, tm, tn, threads;
};

CiqGemmConfig ciq_gemm_config();

// Device pointers; launches on `stream` and returns the launch status.
cudaError_t ciq_sgemm(int m, int n, int k, float alpha, const float* a,
                      const float* b, float beta, float* c,
                      cudaStream_t stream);

// Host pointers: allocates, copies, multiplies, copies back, frees.
// On failure returns the error and writes a message to `error` (if given).
cudaError_t ciq_sgemm_host(int m, int n, int k, const float* a, const float* b,
                           float* c, char* error, std::size_t error_size);
