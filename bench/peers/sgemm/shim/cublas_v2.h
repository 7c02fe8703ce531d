// Empty stand-in for cuBLAS's header: upstream's kernel header includes <cublas_v2.h> but uses
// nothing from it, and pip's CUDA toolkit (the CPU machine's compiler) ships no cuBLAS.
#pragma once
