/* C interface of the kernel libraries, for the Python extension (plain C). */
#ifndef SAMPLE_KERNELS_C_H
#define SAMPLE_KERNELS_C_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* C = A * B for host arrays; returns 0 or a cudaError_t and a message. */
int sample_gemm_host(int m, int n, int k, const float *a, const float *b, float *c, char *error,
                     size_t error_size);
/* The tile sizes compiled in: BM, BN, BK, TM, TN. */
void sample_gemm_params(int values[5]);

/* *result = sum(x); returns 0 or a cudaError_t and a message. */
int sample_reduce_sum_host(const float *x, size_t n, float *result, char *error, size_t error_size);
/* The launch shape compiled in: BLOCK, ITEMS. */
void sample_reduce_params(int values[2]);

#ifdef __cplusplus
}
#endif

#endif
