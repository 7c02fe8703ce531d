// Wrapper benchmark for cuda-samples' convolutionSeparable kernels: one
// rows pass and one columns pass (upstream's timed unit), on a W x H image.
//
//   convolutionSeparable_bench [--w 8192] [--h 8192] [--warmup 3] [--repeats 20] [--seed 1]
//
// W must be a multiple of 128 and H of 64 (upstream's asserts). The output is
// NaN-poisoned first; the check requires every pixel finite and compares 4096
// random pixels plus the corners with a double-precision CPU convolution.
// Prints CIQ_CHECK and CIQ_METRIC time_ms, gbps (compulsory traffic of both
// passes: 4 image-sized transfers) and mpixels.

#include <cmath>
#include <cstdio>
#include <vector>

#include "bench_common.h"
#include "convolutionSeparable_common.h"

int main(int argc, char** argv) {
    const bench::Options options{argc, argv};
    options.only({"--w", "--h", "--warmup", "--repeats", "--seed"});
    const int w = static_cast<int>(options.get("--w", 8192));
    const int h = static_cast<int>(options.get("--h", 8192));
    const int warmup = static_cast<int>(options.get("--warmup", 3));
    const int repeats = static_cast<int>(options.get("--repeats", 20));
    const unsigned long long seed = static_cast<unsigned long long>(options.get("--seed", 1));
    if (w % 128 != 0 || h % 64 != 0) {
        std::fprintf(stderr, "--w must be a multiple of 128 and --h of 64\n");
        return 64;
    }
    bench::require_gpu();

    const size_t n = static_cast<size_t>(w) * h;
    std::vector<float> taps(KERNEL_LENGTH), image(n);
    bench::fill_random(taps, seed + 100, 0.0f, 1.0f);
    bench::fill_random(image, seed, -1.0f, 1.0f);

    float *d_in, *d_buffer, *d_out;
    bench::check(cudaMalloc(&d_in, sizeof(float) * n), "cudaMalloc(in)");
    bench::check(cudaMalloc(&d_buffer, sizeof(float) * n), "cudaMalloc(buffer)");
    bench::check(cudaMalloc(&d_out, sizeof(float) * n), "cudaMalloc(out)");
    bench::check(cudaMemcpy(d_in, image.data(), sizeof(float) * n, cudaMemcpyHostToDevice), "copy in");
    bench::check(cudaMemset(d_buffer, 0xff, sizeof(float) * n), "poison buffer");
    bench::check(cudaMemset(d_out, 0xff, sizeof(float) * n), "poison out");
    setConvolutionKernel(taps.data());
    bench::check(cudaGetLastError(), "setConvolutionKernel");

    auto launch = [&] {
        convolutionRowsGPU(d_buffer, d_in, w, h);
        convolutionColumnsGPU(d_out, d_buffer, w, h);
        return cudaGetLastError();
    };
    bench::check(launch(), "convolution");
    bench::check(cudaDeviceSynchronize(), "convolution");
    std::vector<float> out(n);
    bench::check(cudaMemcpy(out.data(), d_out, sizeof(float) * n, cudaMemcpyDeviceToHost), "copy out");
    size_t unwritten = 0;
    for (float v : out) unwritten += !std::isfinite(v);

    // Reference as upstream's gold code: zero outside the image, taps reversed.
    auto at = [&](long x, long y) -> double {
        return (x < 0 || x >= w || y < 0 || y >= h) ? 0.0 : image[static_cast<size_t>(y) * w + x];
    };
    std::vector<long> points;
    for (int c = 0; c < 4; ++c) {
        points.push_back((c & 1) ? w - 1L : 0L);
        points.push_back((c & 2) ? h - 1L : 0L);
    }
    unsigned long long s = seed * 0x9E3779B97F4A7C15ull + 3;
    for (int i = 0; i < 4096; ++i) {
        for (long extent : {static_cast<long>(w), static_cast<long>(h)}) {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            points.push_back(static_cast<long>((s >> 33) % static_cast<unsigned long long>(extent)));
        }
    }
    double worst = 0.0;
    for (size_t i = 0; i < points.size(); i += 2) {
        const long x = points[i], y = points[i + 1];
        double ref = 0.0, scale = 0.0;
        for (int ky = -KERNEL_RADIUS; ky <= KERNEL_RADIUS; ++ky) {
            if (y + ky < 0 || y + ky >= h) continue;
            double row = 0.0, row_scale = 0.0;
            for (int kx = -KERNEL_RADIUS; kx <= KERNEL_RADIUS; ++kx) {
                row += at(x + kx, y + ky) * taps[KERNEL_RADIUS - kx];
                row_scale += std::fabs(at(x + kx, y + ky)) * taps[KERNEL_RADIUS - kx];
            }
            ref += row * taps[KERNEL_RADIUS - ky];
            scale += row_scale * taps[KERNEL_RADIUS - ky];
        }
        const double err = std::fabs(out[static_cast<size_t>(y) * w + x] - ref) / (scale + 1e-30);
        if (!(err <= worst)) worst = std::isfinite(err) ? err : INFINITY;
    }
    const bool pass = unwritten == 0 && worst <= 1e-5;
    if (!pass) std::fprintf(stderr, "%zu unwritten pixels, worst relative error %.3g\n", unwritten, worst);
    std::printf("CIQ_METRIC max_rel_error=%.3g\n", worst);
    std::printf("CIQ_CHECK %s\n", pass ? "PASS" : "FAIL");
    if (!pass) return 1;

    const double ms = bench::median_ms(launch, warmup, repeats);
    std::printf("CIQ_METRIC time_ms=%.6f\n", ms);
    std::printf("CIQ_METRIC gbps=%.2f\n", 4.0 * sizeof(float) * static_cast<double>(n) / (ms * 1e6));
    std::printf("CIQ_METRIC mpixels=%.1f\n", static_cast<double>(n) / (ms * 1e3));

    bench::check(cudaFree(d_in), "cudaFree(in)");
    bench::check(cudaFree(d_buffer), "cudaFree(buffer)");
    bench::check(cudaFree(d_out), "cudaFree(out)");
    return 0;
}
