# A TEST SHORTCUT, included before project() by the test projects here while CIQ_TEST_COMPILERS names a
# folder (made once a test session by tests/identified_compilers.py, which says why, as measured): a new
# build tree starts with what CMake found out about this machine's compilers in one configure earlier in
# the session, instead of identifying them again.
# Only for a configure that asks for what the probe asked for: this CMake version (each reads its own
# CMakeFiles/<version>/), the same nvcc (and so the same toolkit), the same generator, and no other
# compiler, host compiler, flags or toolchain file, and CUDA architectures set (identifying caches a
# default where none are); any other configure identifies its compilers as ever.
set(_ciq_seed "$ENV{CIQ_TEST_COMPILERS}")
set(_ciq_found "${_ciq_seed}/CMakeFiles/${CMAKE_VERSION}")
set(_ciq_seeded FALSE)
if(NOT CMAKE_PLATFORM_INFO_INITIALIZED AND DEFINED CMAKE_CUDA_COMPILER AND DEFINED CMAKE_CUDA_ARCHITECTURES
   AND EXISTS "${_ciq_found}/CMakeSystem.cmake")
  include("${_ciq_seed}/asked.cmake")  # _ciq_seed_nvcc, _ciq_seed_generator
  file(REAL_PATH "${_ciq_seed_nvcc}" _ciq_nvcc)
  file(REAL_PATH "${CMAKE_CUDA_COMPILER}" _ciq_asked)
  set(_ciq_seeded TRUE)
  if(NOT _ciq_asked STREQUAL _ciq_nvcc OR NOT CMAKE_GENERATOR STREQUAL _ciq_seed_generator)
    set(_ciq_seeded FALSE)
  endif()
  foreach(_ciq_var CMAKE_C_COMPILER CMAKE_CXX_COMPILER CMAKE_CUDA_HOST_COMPILER CMAKE_TOOLCHAIN_FILE CMAKE_SYSROOT
                   CMAKE_CXX_FLAGS CMAKE_CUDA_FLAGS CMAKE_EXE_LINKER_FLAGS)
    if(DEFINED ${_ciq_var})
      set(_ciq_seeded FALSE)
    endif()
  endforeach()
  foreach(_ciq_var CC CXX CUDAHOSTCXX CXXFLAGS CUDAFLAGS LDFLAGS)
    if(DEFINED ENV{${_ciq_var}})
      set(_ciq_seeded FALSE)
    endif()
  endforeach()
endif()
if(_ciq_seeded)
  file(GLOB _ciq_files "${_ciq_found}/CMake*.cmake")
  file(COPY ${_ciq_files} DESTINATION "${CMAKE_BINARY_DIR}/CMakeFiles/${CMAKE_VERSION}")
  # The cache entries identifying leaves (the C++ compiler, ar, ld, ...); absent only while
  # tests/identified_compilers.py's second probe finds out which they are.
  include("${_ciq_found}/cache.cmake" OPTIONAL)
  # What CMake reads to take those files as this tree's own (as in a tree it configured before).
  set(CMAKE_PLATFORM_INFO_INITIALIZED 1 CACHE INTERNAL "Platform information initialized")
endif()
