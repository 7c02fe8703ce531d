// The kernel library's C interface, called by the Python module (mod.cpp).
#pragma once
#ifdef __cplusplus
extern "C" {
#endif

int kern_tile(void);                      // CIQ_TILE as the .cu compile saw it
int kern_device_count(int* count);        // cudaGetDeviceCount's error code (proves cudart is linked)
int kern_scale(float* data, int n, float factor);  // data[i] *= factor on the GPU; a cudaError_t

#ifdef __cplusplus
}
#endif
