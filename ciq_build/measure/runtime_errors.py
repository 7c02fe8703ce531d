"""The CUDA runtime's and driver's own words in a benchmark's output: no usable GPU (`NO_GPU`), and a kernel
that failed to launch or faulted (`KERNEL_FAULT`). The protocol (ciq_build.measure.protocol) looks for them on
every line; what each means for a run is ciq_build.measure.bench.classify's.
"""

from __future__ import annotations

import re

# What the CUDA runtime and driver say when there is no usable GPU (cudaGetErrorString
# and cudaGetErrorName of errors 35 and 100, the driver API's CUDA_ERROR_NO_DEVICE).
# Measured here: "cudaErrorInsufficientDriver: CUDA driver version is insufficient
# for CUDA runtime version".
NO_GPU = re.compile(
    r"cudaErrorInsufficientDriver|cudaErrorNoDevice|CUDA_ERROR_NO_DEVICE"
    r"|CUDA driver version is insufficient|insufficient driver"
    r"|no CUDA-capable device is detected|Found no NVIDIA driver",
    re.IGNORECASE,
)
# What the CUDA runtime and driver say when a kernel failed to launch or faulted (cudaGetErrorString and
# cudaGetErrorName of errors 9, 98, 209, 700-702, 710, 714-719; the driver API's names): the code a compiler
# control made may cause any of them. A benchmark that only prints the error and goes on (a CUDA_CHECK that
# does not exit) then prints a time that measured no work, which would win and be pinned. The texts are
# libcudart 13.3's.
KERNEL_FAULT = re.compile(
    r"an illegal memory access was encountered|too many resources requested for launch"
    r"|the launch timed out and was terminated|device-side assert triggered|hardware stack error"
    r"|an illegal instruction was encountered|misaligned address|invalid program counter"
    r"|unspecified launch failure|operation not supported on global/shared address space"
    r"|no kernel image is available for execution on the device|invalid device function"
    r"|invalid configuration argument"
    r"|cudaError(?:IllegalAddress|LaunchOutOfResources|LaunchTimeout|Assert|HardwareStackError|IllegalInstruction"
    r"|MisalignedAddress|InvalidAddressSpace|InvalidPc|LaunchFailure|NoKernelImageForDevice|InvalidDeviceFunction"
    r"|InvalidConfiguration)\b"
    r"|CUDA_ERROR_(?:ILLEGAL_ADDRESS|LAUNCH_OUT_OF_RESOURCES|LAUNCH_TIMEOUT|ASSERT|HARDWARE_STACK_ERROR"
    r"|ILLEGAL_INSTRUCTION|MISALIGNED_ADDRESS|INVALID_ADDRESS_SPACE|INVALID_PC|LAUNCH_FAILED|NO_BINARY_FOR_GPU)\b",
)
