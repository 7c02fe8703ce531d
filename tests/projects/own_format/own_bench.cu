// TEST DOUBLE for a GPU benchmark (see CMakeLists.txt): it prints its time in
// its own format, "Time= <number> sec|msec|usec" (or its rate, "TFLOPS: <number>", 150 / ms), and no CIQ_ lines;
// with a third argument "ciq", as "CIQ_METRIC time_ms=<number>" and an energy_j instead.
// Built with X == OWN_SKIP_X it "skips its work" and prints a time of 0.
// With OWN_BENCH_WRITES set, each run appends a line to that file.
// Usage: own_bench <s|ms|us|TFLOPS> <decimals> [ciq].
#include <cstdio>
#include <cstdlib>
#include <cstring>

#ifndef X
#define X 3
#endif
#ifndef OWN_SKIP_X
#define OWN_SKIP_X 0
#endif
#ifndef OWN_ZERO_ENERGY_X
#define OWN_ZERO_ENERGY_X 0
#endif

__global__ void never_launched(float* p) { p[threadIdx.x] *= 2.0f; }

int main(int argc, char** argv) {
  if (argc != 3 && !(argc == 4 && std::strcmp(argv[3], "ciq") == 0)) {
    std::printf("usage: own_bench <s|ms|us|TFLOPS> <decimals> [ciq]\n");
    return 1;
  }
  // A deterministic "runtime" in ms, best at X == 1: 1.0, 1.25, 1.5 (the default X);
  // 0 where the benchmark skips its work (an early return, a timer below its resolution).
  const double ms = X == OWN_SKIP_X ? 0.0 : 1.0 + 0.25 * (X > 1 ? X - 1 : 1 - X);
  const int decimals = std::atoi(argv[2]);
  // A benchmark that writes where it should not: each run appends to the file OWN_BENCH_WRITES names.
  if (const char* log = std::getenv("OWN_BENCH_WRITES")) {
    if (FILE* out = std::fopen(log, "a")) {
      std::fprintf(out, "X=%d\n", X);
      std::fclose(out);
    }
  }
  std::printf("own_bench: 3 iterations\n");
  if (argc == 4) {
    std::printf("CIQ_METRIC time_ms=%.*f\n", decimals, ms);
    // And an energy, as a counter that steps in 1 mJ reads it: 0 for X == OWN_ZERO_ENERGY_X (a run too short).
    std::printf("CIQ_METRIC energy_j=%.3f\n", X == OWN_ZERO_ENERGY_X ? 0.0 : ms * 0.004);
  } else if (std::strcmp(argv[1], "TFLOPS") == 0) {
    std::printf("TFLOPS: %.*f\n", decimals, 150.0 / ms);  // higher is better: 100 at the default X, 150 at X == 1
  } else if (std::strcmp(argv[1], "s") == 0) {
    std::printf("Time= %.*f sec\n", decimals, ms / 1e3);
  } else if (std::strcmp(argv[1], "us") == 0) {
    std::printf("Time= %.*f usec\n", decimals, ms * 1e3);
  } else {
    std::printf("Time= %.*f msec\n", decimals, ms);
  }
  return 0;
}
