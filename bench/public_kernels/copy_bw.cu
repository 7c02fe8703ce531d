// The machine's copy ceiling for docs/RESULTS.md: a 2 GiB device-to-device
// cudaMemcpy, bytes read plus bytes written over the median of 20 copies.
//   nvcc -O3 -arch=sm_90a bench/public_kernels/copy_bw.cu -o /tmp/copy_bw && /tmp/copy_bw
#include <algorithm>
#include <cstdio>
#include <vector>
#include <cuda_runtime.h>

#define CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
    std::printf("error %s: %s\n", #x, cudaGetErrorString(e)); return 1; } } while (0)

int main() {
    const size_t bytes = size_t(2) << 30;
    void *a, *b;
    CHECK(cudaMalloc(&a, bytes));
    CHECK(cudaMalloc(&b, bytes));
    CHECK(cudaMemset(a, 1, bytes));
    cudaEvent_t start, stop;
    CHECK(cudaEventCreate(&start));
    CHECK(cudaEventCreate(&stop));
    for (int i = 0; i < 3; ++i) CHECK(cudaMemcpy(b, a, bytes, cudaMemcpyDeviceToDevice));
    std::vector<float> ms;
    for (int i = 0; i < 20; ++i) {
        CHECK(cudaEventRecord(start));
        CHECK(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice));
        CHECK(cudaEventRecord(stop));
        CHECK(cudaEventSynchronize(stop));
        float t = 0;
        CHECK(cudaEventElapsedTime(&t, start, stop));
        ms.push_back(t);
    }
    std::sort(ms.begin(), ms.end());
    std::printf("copy_bw: %.1f GB/s (2 GiB D2D, read+write, median of 20: %.4f ms)\n",
                2.0 * bytes / (ms[10] * 1e6), ms[10]);
    return 0;
}
