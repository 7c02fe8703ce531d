// upstream reduction.cpp's GPU path (benchmarkReduce() without the CPU final sum), as a library call.
#pragma once

// Sums n floats of d_idata into d_odata[0]; d_odata and d_tmp hold at least reduction_blocks(n)
// floats. Returns the first launch or copy error.
int reduction_sum(int n, float* d_idata, float* d_odata, float* d_tmp);
int reduction_blocks(int n);
int reduction_max_threads();
int reduction_max_blocks();
