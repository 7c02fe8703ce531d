// TEST DOUBLE for a GPU benchmark (see CMakeLists.txt): a real process whose
// "time" is computed on the host from X, best at X == 1. MODE 1: killed by
// SIGKILL, as the OOM killer does it (not the candidate's fault).
// For the racing and dedupe tests and bench/racing.py, from the environment:
// TIMER_RUN_LOG: a file each run appends a line to (to count benchmark runs);
// TIMER_NOISE: relative noise of the time (Gaussian sigma, e.g. 0.02), a GPU's
// run-to-run scatter; TIMER_SLEEP_MS: how long a run takes (default: the build's SLEEP_MS, 100);
// TIMER_STEP: how much slower each step of X away from 1 is (default 0.25 ms);
// TIMER_SPAN_LOG: a file each run appends "start end" to (wall-clock seconds around its sleep: when the
// "GPU" was busy, for bench/gpu_busy.py).
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <sys/time.h>
#include <unistd.h>

static double wall_seconds() {
  timeval now;
  gettimeofday(&now, nullptr);
  return now.tv_sec + now.tv_usec * 1e-6;
}

#ifndef X
#define X 3
#endif
#ifndef MODE
#define MODE 0
#endif
#ifndef SLEEP_MS
#define SLEEP_MS 100
#endif

__global__ void never_launched(float* p) { p[threadIdx.x] *= 2.0f; }

int main() {
  // The run's length: TIMER_SLEEP_MS from the environment, else the build's SLEEP_MS
  // (CMake's TIMER_SLEEP_MS, for the timeout tests).
  const char* sleep_ms = std::getenv("TIMER_SLEEP_MS");
  const double start = wall_seconds();
  usleep((sleep_ms ? std::atoi(sleep_ms) : SLEEP_MS) * 1000);  // a benchmark takes time
  if (const char* spans = std::getenv("TIMER_SPAN_LOG")) {
    if (FILE* f = std::fopen(spans, "a")) {
      std::fprintf(f, "%.6f %.6f\n", start, wall_seconds());
      std::fclose(f);
    }
  }
  if (MODE == 1) std::raise(SIGKILL);
  if (const char* log = std::getenv("TIMER_RUN_LOG")) {
    if (FILE* f = std::fopen(log, "a")) {
      std::fprintf(f, "X=%d\n", X);
      std::fclose(f);
    }
  }
  const char* step = std::getenv("TIMER_STEP");
  double time_ms = 1.0 + (step ? std::atof(step) : 0.25) * (X > 1 ? X - 1 : 1 - X);
  if (const char* noise = std::getenv("TIMER_NOISE")) {
    std::mt19937_64 random(std::random_device{}());
    time_ms *= 1.0 + std::atof(noise) * std::normal_distribution<double>()(random);
  }
  std::printf("CIQ_CHECK PASS\nCIQ_METRIC time_ms=%.6f\n", time_ms);
  return 0;
}
