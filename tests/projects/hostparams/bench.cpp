#include <cstdio>

#ifndef UNROLL
#define UNROLL 1
#endif

int grid_for(int n);

int main() {
  // checks as if every candidate were unrolled UNROLL times; BLOCK is the kernels' own
  std::printf("grid %d, unroll %d, \"BLOCK\" untouched\n", grid_for(1024), UNROLL);
  return 0;
}
