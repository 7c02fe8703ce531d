// Benchmark of upstream's FA2 prefill kernel (fi_launch.cu): Q, K, V random in [-2, 2) (made on the GPU from
// a hash of each element's index, so a run's set-up is milliseconds), O checked on 128 sampled (query, head)
// rows against a double-precision softmax(Q K^T / sqrt(head dimension)) V on the CPU, then timed: the median of `repeats`
// launches (cudaEvents, after warm-ups), in the ciq_build line protocol (sample_extension/bench/bench_common.h).
//   fi_bench [--seq 8192] [--heads 32] [--repeats 20]
// FP16 inputs, P rounded to FP16 before the P V product, FP32 accumulation: the sampled rows' relative error
// norm must stay under 2e-2 (a wrong tile or an unwritten row is of order 1), and no entry is NaN; else
// CIQ_CHECK FAIL and exit 1 (the tune marks the candidate invalid, never pins it).
#include <cuda_fp16.h>

#include <cmath>
#include <cstdio>
#include <vector>

#include "bench_common.h"
#include "fi_launch.h"

namespace {

__host__ __device__ inline float element(unsigned long long index, unsigned long long seed) {
    unsigned long long s = (index + 1) * 0x9E3779B97F4A7C15ull ^ seed * 0xBF58476D1CE4E5B9ull;
    s ^= s >> 31;
    s *= 0x94D049BB133111EBull;
    s ^= s >> 29;
    return float(double(s >> 11) * (1.0 / 9007199254740992.0)) * 4.0f - 2.0f;
}

__global__ void fill(half* out, size_t count, unsigned long long seed) {
    for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < count; i += size_t(gridDim.x) * blockDim.x)
        out[i] = __float2half(element(i, seed));
}

// 0 when O matches the reference on the samples, else 1 (after printing CIQ_CHECK FAIL).
int check(const std::vector<half>& Q, const std::vector<half>& K, const std::vector<half>& V,
          const std::vector<half>& O, size_t seq, size_t heads) {
    const size_t d = FI_HEAD_DIM, row = heads * d;
    double err2 = 0.0, ref2 = 0.0;
    int nan = 0;
    unsigned long long s = 4242;
    std::vector<double> score(seq);
    for (int sample = 0; sample < 128; ++sample) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        const size_t i = (s >> 33) % seq, h = (s >> 13) % heads;
        double top = -1e300;
        for (size_t j = 0; j < seq; ++j) {
            double dot = 0.0;
            for (size_t c = 0; c < d; ++c)
                dot += double(__half2float(Q[i * row + h * d + c])) * __half2float(K[j * row + h * d + c]);
            score[j] = dot / std::sqrt(double(d));
            top = std::max(top, score[j]);
        }
        double sum = 0.0;
        for (size_t j = 0; j < seq; ++j) sum += (score[j] = std::exp(score[j] - top));
        for (size_t c = 0; c < d; ++c) {
            double ref = 0.0;
            for (size_t j = 0; j < seq; ++j) ref += score[j] * __half2float(V[j * row + h * d + c]);
            ref /= sum;
            const double got = __half2float(O[i * row + h * d + c]);
            if (std::isnan(got)) ++nan;
            err2 += (got - ref) * (got - ref);
            ref2 += ref * ref;
        }
    }
    const double rel = std::sqrt(err2 / ref2);
    std::printf("relative error %.3g on 128 sampled rows\n", rel);
    if (nan > 0 || !(rel < 2e-2)) {
        std::printf("CIQ_CHECK FAIL\n");
        std::fprintf(stderr, "wrong result: relative error %.3g, %d NaN\n", rel, nan);
        return 1;
    }
    std::printf("CIQ_CHECK PASS\n");
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    const bench::Options opts{argc, argv};
    opts.only({"--seq", "--heads", "--repeats"});
    const size_t seq = static_cast<size_t>(opts.get("--seq", 8192));
    const size_t heads = static_cast<size_t>(opts.get("--heads", 32));
    const int repeats = static_cast<int>(opts.get("--repeats", 20));
    bench::require_gpu();
    const size_t count = seq * heads * FI_HEAD_DIM;
    half *dQ, *dK, *dV, *dO;
    for (half** p : {&dQ, &dK, &dV, &dO}) bench::check(cudaMalloc(p, count * sizeof(half)), "cudaMalloc");
    fill<<<1024, 256>>>(dQ, count, 1);
    fill<<<1024, 256>>>(dK, count, 2);
    fill<<<1024, 256>>>(dV, count, 3);
    bench::check(cudaMemset(dO, 0xFF, count * sizeof(half)), "poison O");  // all NaN until written
    const auto launch = [&] { return fi_prefill(dQ, dK, dV, dO, uint32_t(seq), uint32_t(seq), uint32_t(heads)); };
    bench::check(launch(), "launch");
    bench::check(cudaDeviceSynchronize(), "first launch");
    std::vector<half> Q(count), K(count), V(count), O(count);
    bench::check(cudaMemcpy(Q.data(), dQ, count * sizeof(half), cudaMemcpyDeviceToHost), "copy Q back");
    bench::check(cudaMemcpy(K.data(), dK, count * sizeof(half), cudaMemcpyDeviceToHost), "copy K back");
    bench::check(cudaMemcpy(V.data(), dV, count * sizeof(half), cudaMemcpyDeviceToHost), "copy V back");
    bench::check(cudaMemcpy(O.data(), dO, count * sizeof(half), cudaMemcpyDeviceToHost), "copy O back");
    if (check(Q, K, V, O, seq, heads)) return 1;

    const double ms = bench::median_ms(launch, 3, repeats);
    const double flops = 4.0 * double(seq) * double(seq) * FI_HEAD_DIM * double(heads);  // Q K^T and P V
    std::printf("CIQ_INFO flashinfer FA2 prefill, CTA_TILE_Q %u, NUM_MMA_KV %u: seq %zu, heads %zu, head dim %u, "
                "%.1f TFLOP/s\n", fi_cta_tile_q(), fi_num_mma_kv(), seq, heads, FI_HEAD_DIM, flops / (ms * 1e9));
    std::printf("CIQ_METRIC time_ms=%.6f\n", ms);
    return 0;
}
