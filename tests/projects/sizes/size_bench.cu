// TEST DOUBLE for a GPU benchmark (see CMakeLists.txt): prints
// "CIQ_METRIC time_ms=<number>" for the size it is given, a deterministic
// "runtime" from X. The defaults (X=3) take 1.0 ms on both sizes; X=1 wins
// big on the small size and loses on the large one (0.5, 1.2: geometric mean
// of the ratios 0.775, worst 1.2); X=2 wins a little on both (0.9, 0.9).
// Usage: size_bench --size small|large.
#include <cstdio>
#include <cstring>

#ifndef X
#define X 3
#endif

__global__ void never_launched(float* p) { p[threadIdx.x] *= 2.0f; }

int main(int argc, char** argv) {
  if (argc != 3 || std::strcmp(argv[1], "--size") != 0 ||
      (std::strcmp(argv[2], "small") != 0 && std::strcmp(argv[2], "large") != 0)) {
    std::printf("usage: size_bench --size small|large\n");
    return 1;
  }
  const bool small = std::strcmp(argv[2], "small") == 0;
  const double ms = X == 1 ? (small ? 0.5 : 1.2) : X == 2 ? 0.9 : 1.0;
  std::printf("CIQ_METRIC time_ms=%.6f\n", ms);
  return 0;
}
