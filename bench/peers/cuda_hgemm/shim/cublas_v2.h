// Stand-in for cuBLAS's header where the toolkit has none (pip's CUDA toolkit, the CPU machine's
// compiler): upstream's common.h includes <cublas_v2.h> and uses it only inside a macro that the
// kernels' files never expand. Where the toolkit has cuBLAS (CMakeLists.txt finds CUDA::cublas),
// this folder is not on the include path and the real header is used.
#pragma once
