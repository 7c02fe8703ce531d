// TEST DOUBLE for a GPU benchmark (see CMakeLists.txt): a real process whose
// "time" is computed on the host from X, best at X == 1. MODE 1: killed by
// SIGKILL, as the OOM killer does it (not the candidate's fault).
// For the racing and dedupe tests and bench/racing/run.py, from the environment:
// TIMER_RUN_LOG: a file each run appends a line to (to count benchmark runs);
// TIMER_NOISE: relative noise of the time (Gaussian sigma, e.g. 0.02), a GPU's
// run-to-run scatter; TIMER_SLEEP_MS: how long a run takes (default: the build's SLEEP_MS, 100);
// TIMER_STEP: how much slower each step of X away from 1 is (default 0.25 ms);
// TIMER_SPAN_LOG: a file each run appends "start end" to (wall-clock seconds around its sleep: when the
// "GPU" was busy, for bench/gpu_busy/run.py).
// C headers only: C++ ones such as <random> cost each compile of this file ~0.8 s of CPU more (1.8 s
// against 1.0 s; it is compiled once per candidate).
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
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
  const char* sleep_ms = getenv("TIMER_SLEEP_MS");
  const double start = wall_seconds();
  usleep((sleep_ms ? atoi(sleep_ms) : SLEEP_MS) * 1000);  // a benchmark takes time
  if (const char* spans = getenv("TIMER_SPAN_LOG")) {
    if (FILE* f = fopen(spans, "a")) {
      fprintf(f, "%.6f %.6f\n", start, wall_seconds());
      fclose(f);
    }
  }
  if (MODE == 1) raise(SIGKILL);
  if (const char* log = getenv("TIMER_RUN_LOG")) {
    if (FILE* f = fopen(log, "a")) {
      fprintf(f, "X=%d\n", X);
      fclose(f);
    }
  }
  const char* step = getenv("TIMER_STEP");
  double time_ms = 1.0 + (step ? atof(step) : 0.25) * (X > 1 ? X - 1 : 1 - X);
  if (const char* noise = getenv("TIMER_NOISE")) {
    timeval now;
    gettimeofday(&now, nullptr);
    srand48(now.tv_usec ^ (static_cast<long>(getpid()) << 20));  // each run its own noise
    // Box-Muller: one standard normal draw
    const double gaussian = sqrt(-2.0 * log(1.0 - drand48())) * cos(6.283185307179586 * drand48());
    time_ms *= 1.0 + atof(noise) * gaussian;
  }
  printf("CIQ_CHECK PASS\nCIQ_METRIC time_ms=%.6f\n", time_ms);
  return 0;
}
