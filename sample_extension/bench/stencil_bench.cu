// Benchmark of stencil_kernels: one application of the 25-point star stencil
// (radius 4) on an nx x ny x nz float grid.
//
//   stencil_bench [--nx 512] [--ny 512] [--nz 128] [--warmup 5] [--repeats 20] [--seed 1]
//
// The output is NaN-poisoned first; the check requires every element to be
// written (finite) and compares 4096 random points plus the 8 corners with a
// double-precision CPU stencil. Prints CIQ_CHECK and CIQ_METRIC time_ms, gbps
// (the compulsory traffic: each input read once, each output written once)
// and gflops (29 flops a point).

#include <cmath>
#include <cstdio>
#include <vector>

#include "bench_common.h"
#include "stencil.h"

namespace {

constexpr int R = kCiqStencilRadius;
// 8th-order central second derivative, summed over three axes.
const float kCoef[R + 1] = {3.0f * (-205.0f / 72.0f), 8.0f / 5.0f, -1.0f / 5.0f, 8.0f / 315.0f, -1.0f / 560.0f};

}  // namespace

int main(int argc, char** argv) {
    const bench::Options options{argc, argv};
    options.only({"--nx", "--ny", "--nz", "--warmup", "--repeats", "--seed"});
    const int nx = static_cast<int>(options.get("--nx", 512));
    const int ny = static_cast<int>(options.get("--ny", 512));
    const int nz = static_cast<int>(options.get("--nz", 128));
    const int warmup = static_cast<int>(options.get("--warmup", 5));
    const int repeats = static_cast<int>(options.get("--repeats", 20));
    const unsigned long long seed = static_cast<unsigned long long>(options.get("--seed", 1));

    bench::require_gpu();
    const CiqStencilConfig config = ciq_stencil_config();
    std::fprintf(stderr, "stencil %dx%dx%d, block %dx%d, ry %d, zchunk %d\n", nx, ny, nz, config.bx, config.by,
                 config.ry, config.zchunk);

    const size_t n = static_cast<size_t>(nx) * ny * nz;
    std::vector<float> u(n);
    bench::fill_random(u, seed, -1.0f, 1.0f);

    float *din, *dout;
    bench::check(cudaMalloc(&din, sizeof(float) * n), "cudaMalloc(in)");
    bench::check(cudaMalloc(&dout, sizeof(float) * n), "cudaMalloc(out)");
    bench::check(cudaMemcpy(din, u.data(), sizeof(float) * n, cudaMemcpyHostToDevice), "copy in");
    bench::check(cudaMemset(dout, 0xff, sizeof(float) * n), "poison out");
    bench::check(ciq_stencil_set_coefficients(kCoef), "coefficients");

    auto launch = [&] { return ciq_stencil_apply(din, dout, nx, ny, nz, 0); };
    bench::check(launch(), "stencil");
    bench::check(cudaDeviceSynchronize(), "stencil");
    std::vector<float> out(n);
    bench::check(cudaMemcpy(out.data(), dout, sizeof(float) * n, cudaMemcpyDeviceToHost), "copy out");

    size_t unwritten = 0;
    for (float v : out) unwritten += !std::isfinite(v);

    auto at = [&](long x, long y, long z) -> double {
        if (x < 0 || x >= nx || y < 0 || y >= ny || z < 0 || z >= nz) return 0.0;
        return u[(static_cast<size_t>(z) * ny + y) * nx + x];
    };
    std::vector<long> points;  // x, y, z triples: the corners, then random points
    for (int c = 0; c < 8; ++c) {
        points.push_back((c & 1) ? nx - 1L : 0L);
        points.push_back((c & 2) ? ny - 1L : 0L);
        points.push_back((c & 4) ? nz - 1L : 0L);
    }
    unsigned long long s = seed * 0x9E3779B97F4A7C15ull + 7;
    for (int i = 0; i < 4096; ++i) {
        for (long extent : {static_cast<long>(nx), static_cast<long>(ny), static_cast<long>(nz)}) {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            points.push_back(static_cast<long>((s >> 33) % static_cast<unsigned long long>(extent)));
        }
    }
    double worst = 0.0;
    for (size_t i = 0; i < points.size(); i += 3) {
        const long x = points[i], y = points[i + 1], z = points[i + 2];
        double ref = kCoef[0] * at(x, y, z), scale = std::fabs(kCoef[0] * at(x, y, z));
        for (int r = 1; r <= R; ++r) {
            const double t = at(x - r, y, z) + at(x + r, y, z) + at(x, y - r, z) + at(x, y + r, z) +
                             at(x, y, z - r) + at(x, y, z + r);
            ref += kCoef[r] * t;
            scale += std::fabs(kCoef[r]) * (std::fabs(at(x - r, y, z)) + std::fabs(at(x + r, y, z)) +
                                            std::fabs(at(x, y - r, z)) + std::fabs(at(x, y + r, z)) +
                                            std::fabs(at(x, y, z - r)) + std::fabs(at(x, y, z + r)));
        }
        const double got = out[(static_cast<size_t>(z) * ny + y) * nx + x];
        const double err = std::fabs(got - ref) / (scale + 1e-30);
        if (!(err <= worst)) worst = std::isfinite(err) ? err : INFINITY;
    }
    // float sums of 25 terms: a few ulps of the magnitude; 1e-5 is far above
    // that and far below a wrong or missing term.
    const bool pass = unwritten == 0 && worst <= 1e-5;
    if (!pass) std::fprintf(stderr, "%zu unwritten outputs, worst relative error %.3g\n", unwritten, worst);
    std::printf("CIQ_METRIC max_rel_error=%.3g\n", worst);
    std::printf("CIQ_CHECK %s\n", pass ? "PASS" : "FAIL");
    if (!pass) return 1;

    const double ms = bench::median_ms(launch, warmup, repeats);
    std::printf("CIQ_METRIC time_ms=%.6f\n", ms);
    std::printf("CIQ_METRIC gbps=%.2f\n", 2.0 * sizeof(float) * static_cast<double>(n) / (ms * 1e6));
    std::printf("CIQ_METRIC gflops=%.2f\n", 29.0 * static_cast<double>(n) / (ms * 1e6));

    bench::check(cudaFree(din), "cudaFree(in)");
    bench::check(cudaFree(dout), "cudaFree(out)");
    return 0;
}
