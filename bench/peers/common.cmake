# What every peer project (bench/peers/*/CMakeLists.txt) sets up around its project() call:
#
#   cmake_minimum_required(VERSION 3.24...4.4)
#   include(${CMAKE_CURRENT_LIST_DIR}/../common.cmake)  # before project(): architectures and build type
#   project(<name> LANGUAGES C CXX CUDA)
#   ciq_peer_toolkit()                                   # after: C++17, the CUDA toolkit and ciq_build

if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES AND NOT DEFINED ENV{CUDAARCHS})
  set(CMAKE_CUDA_ARCHITECTURES 90a CACHE STRING "CUDA architectures to build for")
endif()
if(NOT CMAKE_BUILD_TYPE AND NOT CMAKE_CONFIGURATION_TYPES)
  set(CMAKE_BUILD_TYPE Release CACHE STRING "Build type")
endif()

# A macro: the find_package() results and the standards are the calling project's.
macro(ciq_peer_toolkit)
  set(CMAKE_CXX_STANDARD 17)
  set(CMAKE_CUDA_STANDARD 17)
  # pip's CUDA toolkit ships only libcudart.so.13 (see sample_extension/CMakeLists.txt).
  if(NOT CUDA_CUDART)
    get_filename_component(cuda_bin "${CMAKE_CUDA_COMPILER}" DIRECTORY)
    if(NOT EXISTS "${cuda_bin}/../lib/libcudart.so" AND NOT EXISTS "${cuda_bin}/../lib64/libcudart.so")
      file(GLOB versioned "${cuda_bin}/../lib/libcudart.so.[0-9]*")
      if(versioned)
        list(GET versioned 0 versioned)
        set(CUDA_CUDART "${versioned}" CACHE FILEPATH "Shared CUDA runtime" FORCE)
      endif()
    endif()
  endif()
  find_package(CUDAToolkit REQUIRED)
  find_package(ciq_build CONFIG REQUIRED)
endmacro()
