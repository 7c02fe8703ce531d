// The tuned library of the dry run: a kernel nvcc really compiles, and the
// candidate's X and Y for the host-only benchmark to turn into a "time".
#ifndef X
#define X 0
#endif
#ifndef Y
#define Y 0
#endif

__global__ void dry_scale(float* data, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) data[i] *= static_cast<float>(X + Y + 1);
}

int dry_cost() { return (X > 5 ? X - 5 : 5 - X) + (Y > 2 ? Y - 2 : 2 - Y); }
