// Prints the CUDA runtime's version: needs the runtime library, not a GPU.
#include <cstdio>
#include <cuda_runtime.h>

int main()
{
    int version = 0;
    if (cudaRuntimeGetVersion(&version) != cudaSuccess) {
        return 1;
    }
    std::printf("cudart %d\n", version);
    return 0;
}
