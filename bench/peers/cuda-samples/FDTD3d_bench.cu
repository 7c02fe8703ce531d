// Wrapper benchmark for cuda-samples' FDTD3d kernel: one timestep (one launch of
// FiniteDifferencesKernel, upstream's timed unit: it reports the average over
// timesteps) on a dim^3 inner volume with radius-4 halos, upstream's layout and
// padding. Upstream's default on a GPU of this size is 376^3 (k_dim_max).
//
//   FDTD3d_bench [--dim 376] [--warmup 3] [--repeats 20] [--seed 1]
//
// Each timed launch reads the same input and writes the same output (no
// ping-pong, so the values stay the same from launch to launch). Before timing,
// the output's inner volume is NaN-poisoned (its halo is the input's, as upstream
// copies it); the check requires every inner point finite, the halo untouched,
// and 4096 random inner points plus the 8 corners within 1e-5 (relative to the sum
// of |terms|) of a double-precision CPU stencil. Prints CIQ_CHECK and CIQ_METRIC
// time_ms, gbps (compulsory traffic: the outer volume read once, the inner
// written once), mpoints, block_threads, blocks_per_sm (the occupancy of the
// kernel as compiled: registers decide it) and waves (grid blocks over resident
// blocks on the whole GPU).

#include <cmath>
#include <cstdio>
#include <vector>

#include "bench_common.h"
#include "FDTD3d_launch.h"

int main(int argc, char** argv) {
    const bench::Options options{argc, argv};
    options.only({"--dim", "--warmup", "--repeats", "--seed"});
    const int dim = static_cast<int>(options.get("--dim", 376));
    const int warmup = static_cast<int>(options.get("--warmup", 3));
    const int repeats = static_cast<int>(options.get("--repeats", 20));
    const unsigned long long seed = static_cast<unsigned long long>(options.get("--seed", 1));
    if (dim < 8 || dim > 1024) {
        std::fprintf(stderr, "--dim must be in [8, 1024]\n");
        return 64;
    }
    bench::require_gpu();

    const int r = fdtd3dRadius();
    const long outer = dim + 2L * r, stride_y = outer, stride_z = outer * outer;
    const size_t volume = static_cast<size_t>(outer * outer * outer);
    const size_t padding = 128 / sizeof(float) - r;  // as upstream's fdtdGPU()
    std::vector<float> coeff(r + 1), input(volume);
    bench::fill_random(coeff, seed + 100, 0.0f, 1.0f / (6 * r + 1));  // sum below 1: stable values
    bench::fill_random(input, seed, -1.0f, 1.0f);
    std::vector<float> poisoned(input);
    auto inner = [&](long x, long y, long z) { return x >= r && x < r + dim && y >= r && y < r + dim && z >= r && z < r + dim; };
    for (long z = r; z < r + dim; ++z)
        for (long y = r; y < r + dim; ++y)
            for (long x = r; x < r + dim; ++x) poisoned[z * stride_z + y * stride_y + x] = NAN;

    float *d_in, *d_out;
    bench::check(cudaMalloc(&d_in, sizeof(float) * (volume + padding)), "cudaMalloc(in)");
    bench::check(cudaMalloc(&d_out, sizeof(float) * (volume + padding)), "cudaMalloc(out)");
    float *src = d_in + padding, *dst = d_out + padding;
    bench::check(cudaMemcpy(src, input.data(), sizeof(float) * volume, cudaMemcpyHostToDevice), "copy in");
    bench::check(cudaMemcpy(dst, poisoned.data(), sizeof(float) * volume, cudaMemcpyHostToDevice), "poison out");
    bench::check(fdtd3dSetStencil(coeff.data()), "set stencil");

    int block_x = 0, block_y = 0;
    auto launch = [&] { return fdtd3dStep(dst, src, dim, dim, dim, &block_x, &block_y); };
    bench::check(launch(), "FDTD3d step");
    bench::check(cudaDeviceSynchronize(), "FDTD3d step");
    std::vector<float> out(volume);
    bench::check(cudaMemcpy(out.data(), dst, sizeof(float) * volume, cudaMemcpyDeviceToHost), "copy out");

    size_t unwritten = 0, halo_changed = 0;
    for (long z = 0; z < outer; ++z)
        for (long y = 0; y < outer; ++y)
            for (long x = 0; x < outer; ++x) {
                const size_t i = static_cast<size_t>(z * stride_z + y * stride_y + x);
                if (inner(x, y, z)) unwritten += !std::isfinite(out[i]);
                else halo_changed += !(out[i] == input[i]);
            }

    std::vector<long> points;
    for (int c = 0; c < 8; ++c)
        for (int axis = 0; axis < 3; ++axis) points.push_back((c >> axis & 1) ? r + dim - 1L : r);
    unsigned long long s = seed * 0x9E3779B97F4A7C15ull + 3;
    for (int i = 0; i < 3 * 4096; ++i) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        points.push_back(r + static_cast<long>((s >> 33) % static_cast<unsigned long long>(dim)));
    }
    double worst = 0.0;
    for (size_t i = 0; i < points.size(); i += 3) {
        const long c = points[i + 2] * stride_z + points[i + 1] * stride_y + points[i];
        double ref = static_cast<double>(input[c]) * coeff[0], scale = std::fabs(ref);
        for (long k = 1; k <= r; ++k)
            for (long step : {1L, stride_y, stride_z})
                for (long sign : {-1L, 1L}) {
                    const double term = static_cast<double>(coeff[k]) * input[c + sign * k * step];
                    ref += term;
                    scale += std::fabs(term);
                }
        const double err = std::fabs(out[c] - ref) / (scale + 1e-30);
        if (!(err <= worst)) worst = std::isfinite(err) ? err : INFINITY;
    }
    const bool pass = unwritten == 0 && halo_changed == 0 && worst <= 1e-5;
    if (!pass)
        std::fprintf(stderr, "%zu unwritten points, %zu halo points changed, worst relative error %.3g\n", unwritten,
                     halo_changed, worst);
    std::printf("CIQ_METRIC max_rel_error=%.3g\n", worst);
    std::printf("CIQ_CHECK %s\n", pass ? "PASS" : "FAIL");
    if (!pass) return 1;

    const double ms = bench::median_ms(launch, warmup, repeats);
    const double points_n = static_cast<double>(dim) * dim * dim;
    std::printf("CIQ_METRIC time_ms=%.6f\n", ms);
    std::printf("CIQ_METRIC gbps=%.2f\n", sizeof(float) * (static_cast<double>(volume) + points_n) / (ms * 1e6));
    std::printf("CIQ_METRIC mpoints=%.1f\n", points_n / (ms * 1e3));
    std::printf("CIQ_METRIC block_threads=%d\n", block_x * block_y);
    int sms = 0;
    bench::check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0), "multiprocessor count");
    const int per_sm = fdtd3dBlocksPerSM();
    const long grid = static_cast<long>((dim + block_x - 1) / block_x) * ((dim + block_y - 1) / block_y);
    std::printf("CIQ_METRIC blocks_per_sm=%d\n", per_sm);
    if (per_sm > 0) std::printf("CIQ_METRIC waves=%.3f\n", static_cast<double>(grid) / (static_cast<double>(per_sm) * sms));

    bench::check(cudaFree(d_in), "cudaFree(in)");
    bench::check(cudaFree(d_out), "cudaFree(out)");
    return 0;
}
