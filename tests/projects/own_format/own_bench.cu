// TEST DOUBLE for a GPU benchmark (see CMakeLists.txt): it prints its time in
// its own format, "Time= <number> sec|msec|usec", and no CIQ_ lines at all.
// Usage: own_bench <s|ms|us> <decimals>.
#include <cstdio>
#include <cstdlib>
#include <cstring>

#ifndef X
#define X 3
#endif

__global__ void never_launched(float* p) { p[threadIdx.x] *= 2.0f; }

int main(int argc, char** argv) {
  if (argc != 3) {
    std::printf("usage: own_bench <s|ms|us> <decimals>\n");
    return 1;
  }
  // A deterministic "runtime" in ms, best at X == 1: 1.0, 1.25, 1.5 (the default X).
  const double ms = 1.0 + 0.25 * (X > 1 ? X - 1 : 1 - X);
  const int decimals = std::atoi(argv[2]);
  std::printf("own_bench: 3 iterations\n");
  if (std::strcmp(argv[1], "s") == 0) {
    std::printf("Time= %.*f sec\n", decimals, ms / 1e3);
  } else if (std::strcmp(argv[1], "us") == 0) {
    std::printf("Time= %.*f usec\n", decimals, ms * 1e3);
  } else {
    std::printf("Time= %.*f msec\n", decimals, ms);
  }
  return 0;
}
