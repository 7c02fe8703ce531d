// Shared pieces of the sample benchmarks: the ciq_build line protocol, CUDA
// error checks, GPU detection, options, and cudaEvent timing.
//
// Protocol (read by `python -m ciq_build tune`):
//   CIQ_METRIC <name>=<number>   measurements; `time_ms` is the time objective
//   CIQ_CHECK PASS|FAIL          the benchmark's own correctness verdict
//   CIQ_ERROR no-gpu             no usable GPU (exit status 2)
//   CIQ_INFO ...                 ignored by the protocol: which GPU the run used
//
// With CIQ_BENCH_LOG set, each run appends one line to that file when it exits:
//   <pid> <start_ns> <end_ns> visible=<CUDA_VISIBLE_DEVICES> bus=<PCI bus id>
// (wall-clock ns): bench/multi_gpu/steps.py checks from it that each run used the GPU
// it was given and that no two runs overlapped on one GPU.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <unistd.h>

#include <cuda_runtime.h>

namespace bench {

[[noreturn]] inline void fail(const char* what, cudaError_t status) {
    std::printf("CIQ_ERROR cuda %s: %s (%s)\n", what, cudaGetErrorString(status),
                cudaGetErrorName(status));
    std::fflush(stdout);
    std::exit(1);
}

// Every CUDA call goes through this.
inline void check(cudaError_t status, const char* what) {
    if (status != cudaSuccess) fail(what, status);
}

namespace detail {
inline long long wall_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::system_clock::now().time_since_epoch()).count();
}
inline long long run_start_ns = 0;
inline char run_bus[32] = "unknown";
inline void append_run_log() {
    const char* path = std::getenv("CIQ_BENCH_LOG");
    if (path == nullptr || *path == '\0') return;
    if (std::FILE* log = std::fopen(path, "a")) {  // one short write per line: O_APPEND keeps lines whole
        const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
        std::fprintf(log, "%lld %lld %lld visible=%s bus=%s\n", static_cast<long long>(getpid()),
                     run_start_ns, wall_ns(), visible && *visible ? visible : "-", run_bus);
        std::fclose(log);
    }
}
}  // namespace detail

// Exits 2 with `CIQ_ERROR no-gpu` when the runtime finds no usable device
// (no driver, a driver too old for this runtime, or no device).
inline int require_gpu() {
    detail::run_start_ns = detail::wall_ns();  // before the CUDA context: the run holds its GPU from here
    std::atexit(detail::append_run_log);
    int count = 0;
    const cudaError_t status = cudaGetDeviceCount(&count);
    if (status != cudaSuccess || count == 0) {
        std::printf("CIQ_ERROR no-gpu\n");
        std::fprintf(stderr, "no usable CUDA device: %s\n",
                     status != cudaSuccess ? cudaGetErrorString(status) : "device count is 0");
        std::fflush(stdout);
        std::exit(2);
    }
    int device = 0;
    check(cudaGetDevice(&device), "cudaGetDevice");
    cudaDeviceProp prop{};
    check(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties");
    std::fprintf(stderr, "device %d: %s (sm_%d%d, %d SMs)\n", device, prop.name, prop.major,
                 prop.minor, prop.multiProcessorCount);
    check(cudaDeviceGetPCIBusId(detail::run_bus, sizeof detail::run_bus, device), "cudaDeviceGetPCIBusId");
    const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
    std::printf("CIQ_INFO device %d bus %s CUDA_VISIBLE_DEVICES=%s\n", device, detail::run_bus,
                visible && *visible ? visible : "-");
    return prop.multiProcessorCount;
}

// --name value options; unknown options are an error (exit 64).
struct Options {
    int argc;
    char** argv;

    long long get(const char* name, long long fallback) const {
        for (int i = 1; i + 1 < argc; i += 2) {
            if (std::strcmp(argv[i], name) == 0) {
                char* end = nullptr;
                const long long value = std::strtoll(argv[i + 1], &end, 10);
                if (end == argv[i + 1] || *end != '\0' || value <= 0) {
                    std::fprintf(stderr, "%s needs a positive integer, got '%s'\n", name, argv[i + 1]);
                    std::exit(64);
                }
                return value;
            }
        }
        return fallback;
    }

    void only(std::initializer_list<const char*> known) const {
        if (argc % 2 == 0) {
            std::fprintf(stderr, "options come in pairs: --name value\n");
            std::exit(64);
        }
        for (int i = 1; i < argc; i += 2) {
            bool ok = false;
            for (const char* name : known) ok = ok || std::strcmp(argv[i], name) == 0;
            if (!ok) {
                std::fprintf(stderr, "unknown option %s\n", argv[i]);
                std::exit(64);
            }
        }
    }
};

// Times `launch` `repeats` times (after `warmup` untimed runs) with cudaEvents;
// returns the median in milliseconds.
template <typename Launch>
double median_ms(Launch launch, int warmup, int repeats) {
    for (int i = 0; i < warmup; ++i) check(launch(), "warm-up launch");
    check(cudaDeviceSynchronize(), "warm-up");
    cudaEvent_t start, stop;
    check(cudaEventCreate(&start), "cudaEventCreate");
    check(cudaEventCreate(&stop), "cudaEventCreate");
    std::vector<double> times;
    for (int i = 0; i < repeats; ++i) {
        check(cudaEventRecord(start), "cudaEventRecord");
        check(launch(), "timed launch");
        check(cudaEventRecord(stop), "cudaEventRecord");
        check(cudaEventSynchronize(stop), "cudaEventSynchronize");
        float ms = 0.0f;
        check(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
        times.push_back(ms);
    }
    check(cudaEventDestroy(start), "cudaEventDestroy");
    check(cudaEventDestroy(stop), "cudaEventDestroy");
    std::sort(times.begin(), times.end());
    const size_t mid = times.size() / 2;
    return times.size() % 2 ? times[mid] : 0.5 * (times[mid - 1] + times[mid]);
}

// Deterministic uniform floats in [lo, hi) (64-bit LCG; no <random> state).
inline void fill_random(std::vector<float>& v, unsigned long long seed, float lo, float hi) {
    unsigned long long s = seed * 6364136223846793005ull + 1442695040888963407ull;
    for (float& x : v) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        const double u = static_cast<double>(s >> 11) * (1.0 / 9007199254740992.0);
        x = static_cast<float>(lo + (hi - lo) * u);
    }
}

}  // namespace bench
