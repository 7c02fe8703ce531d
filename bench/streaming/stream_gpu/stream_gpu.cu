// A benchmark that times a CUDA kernel REPS times in one process with CUDA events, for
// bench/streaming/run.py --gpu. The kernel's work grows by STEP per step of -D X away from 1 (best at X == 1):
// the landscape of tests/projects/stream's CPU stand-in, on a real GPU, with its real process start,
// CUDA initialisation and run-to-run scatter. From the environment (as the CPU stand-in):
//   STREAM_SAMPLES=1   print CIQ_SAMPLES, then each repetition's time as it is measured (flushed);
//                      otherwise one CIQ_METRIC time_ms line at the end: the mean of the repetitions
//   STREAM_REPS        timed repetitions per process (default 60), after 2 untimed warm-up launches
//   STREAM_BASE_MS     about how long X == 1 takes per repetition (default 8 ms): the work per unit is
//                      sized once per process from a timed launch
//   STREAM_STEP        how much more work each step of X away from 1 is, as a fraction (default 0.1)
//   STREAM_LOG         a file each repetition appends "X=<x> pid=<pid> rep=<i>" to, as it ends
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>
#include <unistd.h>

#ifndef X
#define X 3
#endif

__global__ void work(float* out, long long iters) {
  float a = 1.0f + threadIdx.x * 1e-6f;
  for (long long i = 0; i < iters; ++i) a = fmaf(a, 0.9999999f, 1e-7f);  // a dependent chain: time ~ iters
  out[blockIdx.x * blockDim.x + threadIdx.x] = a;
}

static double setting(const char* name, double fallback) {
  const char* value = std::getenv(name);
  return value ? std::atof(value) : fallback;
}

#define CHECK(call)                                                                       \
  do {                                                                                    \
    cudaError_t err = (call);                                                             \
    if (err != cudaSuccess) {                                                             \
      std::printf("%s: %s\n", #call, cudaGetErrorString(err));                            \
      if (err == cudaErrorNoDevice || err == cudaErrorInsufficientDriver)                 \
        std::printf("CIQ_ERROR no-gpu\n");                                                \
      return 1;                                                                           \
    }                                                                                     \
  } while (0)

int main() {
  const int reps = static_cast<int>(setting("STREAM_REPS", 60));
  const bool streaming = setting("STREAM_SAMPLES", 0) != 0;
  const double base_ms = setting("STREAM_BASE_MS", 8);
  const double factor = 1.0 + setting("STREAM_STEP", 0.1) * std::abs(X - 1);
  const char* log = std::getenv("STREAM_LOG");
  int device = 0, sms = 0;
  CHECK(cudaGetDevice(&device));
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  const int threads = 256, blocks = 4 * sms;
  float* out = nullptr;
  CHECK(cudaMalloc(&out, sizeof(float) * threads * blocks));
  cudaEvent_t start, stop;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  auto timed = [&](long long iters, float* ms) -> cudaError_t {
    cudaEventRecord(start);
    work<<<blocks, threads>>>(out, iters);
    cudaEventRecord(stop);
    cudaError_t err = cudaEventSynchronize(stop);
    if (err == cudaSuccess) err = cudaGetLastError();
    if (err == cudaSuccess) err = cudaEventElapsedTime(ms, start, stop);
    return err;
  };
  // The work of X == 1 sized to about base_ms on this GPU (the same for every X: only X changes the ratio).
  const long long probe = 1000000;  // a few ms: its timing error (us) is far below the spread of a repetition
  float probe_ms = 0;
  CHECK(timed(probe, &probe_ms));  // warm-up
  CHECK(timed(probe, &probe_ms));
  const long long unit = static_cast<long long>(probe * base_ms / std::max(probe_ms, 1e-3f));
  const long long iters = static_cast<long long>(unit * factor);
  float ms = 0;
  CHECK(timed(iters, &ms));  // warm-up at the real size
  if (streaming) std::printf("CIQ_SAMPLES\n");
  double total = 0;
  for (int rep = 0; rep < reps; ++rep) {
    CHECK(timed(iters, &ms));
    total += ms;
    if (log) {
      if (FILE* f = std::fopen(log, "a")) {
        std::fprintf(f, "X=%d pid=%d rep=%d\n", X, static_cast<int>(getpid()), rep);
        std::fclose(f);
      }
    }
    if (streaming) {
      std::printf("CIQ_METRIC time_ms=%.6f\n", ms);
      std::fflush(stdout);  // racing reads each sample as it comes
    }
  }
  float host[1];
  CHECK(cudaMemcpy(host, out, sizeof(float), cudaMemcpyDeviceToHost));
  if (!streaming) std::printf("CIQ_METRIC time_ms=%.6f\n", total / reps);
  std::printf("CIQ_CHECK %s\n", std::isfinite(host[0]) ? "PASS" : "FAIL");
  CHECK(cudaFree(out));
  return 0;
}
