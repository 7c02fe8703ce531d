// TEST DOUBLE for a GPU benchmark (see CMakeLists.txt): a real process whose
// "time" is computed on the host from X, best at X == 1. MODE 1: killed by
// SIGKILL, as the OOM killer does it (not the candidate's fault).
#include <csignal>
#include <cstdio>
#include <unistd.h>

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
  usleep(SLEEP_MS * 1000);  // a benchmark takes time
  if (MODE == 1) std::raise(SIGKILL);
  std::printf("CIQ_CHECK PASS\nCIQ_METRIC time_ms=%.6f\n", 1.0 + 0.25 * (X > 1 ? X - 1 : 1 - X));
  return 0;
}
