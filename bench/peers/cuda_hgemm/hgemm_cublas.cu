// cuBLAS on the HGEMM benchmark's problem, as upstream's src/cublas_tensor_op.cu calls it (cublasGemmEx,
// half in and out, CUBLAS_COMPUTE_16F, B transposed), checked and timed the same way as hgemm_bench.cu
// and printing the same line: the reference upstream's kernels are measured against. Built only where the
// toolkit has cuBLAS (the GPU machine's; pip's toolkit on the CPU machine has none).
#include <cublas_v2.h>

#include <cstdio>
#include <vector>

#include "bench_common.h"
#include "hgemm_check.h"

static void check_cublas(cublasStatus_t status, const char* what) {
    if (status != CUBLAS_STATUS_SUCCESS) {
        std::fprintf(stderr, "%s: cuBLAS status %d\n", what, static_cast<int>(status));
        std::exit(1);
    }
}

int main(int argc, char** argv) {
    const bench::Options opts{argc, argv};
    opts.only({"--size", "--repeats"});
    const int n = static_cast<int>(opts.get("--size", 8192));
    const int repeats = static_cast<int>(opts.get("--repeats", 20));
    bench::require_gpu();
    const size_t count = static_cast<size_t>(n) * n;
    const std::vector<half> A = hgemm_check::random_half(count, 1), B = hgemm_check::random_half(count, 2);
    half *dA, *dB, *dC;
    bench::check(cudaMalloc(&dA, count * sizeof(half)), "cudaMalloc A");
    bench::check(cudaMalloc(&dB, count * sizeof(half)), "cudaMalloc B");
    bench::check(cudaMalloc(&dC, count * sizeof(half)), "cudaMalloc C");
    bench::check(cudaMemcpy(dA, A.data(), count * sizeof(half), cudaMemcpyHostToDevice), "copy A");
    bench::check(cudaMemcpy(dB, B.data(), count * sizeof(half), cudaMemcpyHostToDevice), "copy B");
    bench::check(cudaMemset(dC, 0xFF, count * sizeof(half)), "poison C");
    cublasHandle_t handle;
    check_cublas(cublasCreate(&handle), "cublasCreate");
    const half alpha = __float2half(1.0f), beta = __float2half(0.0f);
    auto gemm = [&] {  // upstream's call, unchanged: the row-major C = A * B^T in cuBLAS's column-major terms
        check_cublas(cublasGemmEx(handle, CUBLAS_OP_T, CUBLAS_OP_N, n, n, n, &alpha, dB, CUDA_R_16F, n, dA,
                                  CUDA_R_16F, n, &beta, dC, CUDA_R_16F, n, CUBLAS_COMPUTE_16F,
                                  CUBLAS_GEMM_DEFAULT_TENSOR_OP),
                     "cublasGemmEx");
    };
    gemm();
    std::vector<half> C(count);
    bench::check(cudaMemcpy(C.data(), dC, count * sizeof(half), cudaMemcpyDeviceToHost), "copy C back");
    if (hgemm_check::check(A, B, C, n, n, n)) return 1;
    gemm();
    bench::check(cudaDeviceSynchronize(), "warm-up");
    cudaEvent_t beg, end;
    bench::check(cudaEventCreate(&beg), "cudaEventCreate");
    bench::check(cudaEventCreate(&end), "cudaEventCreate");
    bench::check(cudaEventRecord(beg), "cudaEventRecord");
    for (int r = 0; r < repeats; ++r) gemm();
    bench::check(cudaEventRecord(end), "cudaEventRecord");
    bench::check(cudaEventSynchronize(end), "cudaEventSynchronize");
    float ms = 0.0f;
    bench::check(cudaEventElapsedTime(&ms, beg, end), "cudaEventElapsedTime");
    const double seconds = ms / 1000.0, flops = 2.0 * n * n * double(n);
    std::printf("cuBLAS cublasGemmEx CUBLAS_COMPUTE_16F\n");
    std::printf("Average elapsed time: (%9.6f) s, performance: (%7.1f) GFLOPS. size: (%d).\n", seconds / repeats,
                (repeats * flops * 1e-9) / seconds, n);
    return 0;
}
