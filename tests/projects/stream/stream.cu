// TEST DOUBLE for a GPU benchmark that times its kernel several times in one process: a CPU stand-in
// for the GPU. Each repetition sleeps as long as the "kernel" takes, a time computed on the host from
// -D X (best at X == 1), with Gaussian noise (a GPU's scatter), so benchmark seconds are real seconds.
// From the environment:
//   STREAM_SAMPLES=1   print CIQ_SAMPLES, then each repetition's time as it is measured (flushed);
//                      otherwise one CIQ_METRIC time_ms line at the end: the mean of the repetitions
//   STREAM_REPS        repetitions per process (default 20)
//   STREAM_BASE_MS     the best X's time per repetition (default 5 ms)
//   STREAM_STEP        how much slower each step of X away from 1 is, as a fraction (default 0.2)
//   STREAM_NOISE       relative noise of one repetition (Gaussian sigma, default 0.01)
//   STREAM_LOG         a file each repetition appends "X=<x> pid=<pid> rep=<i>" to, as it ends
//   STREAM_HANG_AFTER  hang (sleep for ever) after this many repetitions: a benchmark that stops answering
// C headers only: C++ ones such as <random> cost each compile of this file ~0.8 s of CPU more (1.8 s
// against 1.0 s; it is compiled once per candidate).
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/time.h>
#include <unistd.h>

#ifndef X
#define X 3
#endif

__global__ void never_launched(float* p) { p[threadIdx.x] *= 2.0f; }

static double gaussian() {  // Box-Muller: one standard normal draw
  return sqrt(-2.0 * log(1.0 - drand48())) * cos(6.283185307179586 * drand48());
}

static double setting(const char* name, double fallback) {
  const char* value = getenv(name);
  return value ? atof(value) : fallback;
}

int main() {
  const int reps = static_cast<int>(setting("STREAM_REPS", 20));
  const bool streaming = setting("STREAM_SAMPLES", 0) != 0;
  const int hang_after = static_cast<int>(setting("STREAM_HANG_AFTER", -1));
  const double ms = setting("STREAM_BASE_MS", 5) * (1.0 + setting("STREAM_STEP", 0.2) * abs(X - 1));
  const double noise = setting("STREAM_NOISE", 0.01);
  const char* log = getenv("STREAM_LOG");
  timeval now;
  gettimeofday(&now, nullptr);
  srand48(now.tv_usec ^ (static_cast<long>(getpid()) << 20));  // each process its own noise
  if (streaming) printf("CIQ_SAMPLES\n");
  double total = 0;
  for (int rep = 0; rep < reps; ++rep) {
    if (rep == hang_after) for (;;) pause();
    const double time_ms = ms * fmax(0.5, 1.0 + noise * gaussian());
    usleep(static_cast<useconds_t>(time_ms * 1000));  // the "kernel" runs this long
    total += time_ms;
    if (log) {
      if (FILE* f = fopen(log, "a")) {
        fprintf(f, "X=%d pid=%d rep=%d\n", X, static_cast<int>(getpid()), rep);
        fclose(f);
      }
    }
    if (streaming) {
      printf("CIQ_METRIC time_ms=%.6f\n", time_ms);
      fflush(stdout);  // racing reads each sample as it comes
    }
  }
  if (!streaming) printf("CIQ_METRIC time_ms=%.6f\n", total / reps);
  printf("CIQ_CHECK PASS\n");
  return 0;
}
