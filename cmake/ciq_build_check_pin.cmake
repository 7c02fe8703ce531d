# Check pinned records as ciq_tune_target() would, without a project:
#
#   cmake -DCIQ_CASES=<file> -P ciq_build_check_pin.cmake
#
# <file> holds one case per line, fields separated by a TAB:
#   <pin dir>/<target>.json  <PARAMS, "|"-separated>  <ALLOW_NUMERICS ON|OFF>
#   <CUDA major.minor of the compiler>  <build dir for an ACF copy>
#   <ptxas major.minor, or empty>  <the build's architectures, "|"-separated>
#   [<the project's top folder: no folder from it to the pin dir may be a link>]
# For each case it prints one line, "case <n>: <status>: <the status line>" (applied,
# none, skipped, or "refused: <the error configure gives>"), then "case <n> arg: <a>"
# per nvcc argument; for a pin applied per -gencode, then "case <n> arg: [<arch>]"
# and "case <n> arg: [<arch>] <a>" per architecture and argument. The rule-book agreement test drives the CMake module
# through this script, many records per process.
cmake_minimum_required(VERSION 3.24)
include("${CMAKE_CURRENT_LIST_DIR}/ciq_build.cmake")
if(NOT DEFINED CIQ_CASES)
  message(FATAL_ERROR "ciq_build_check_pin: give -DCIQ_CASES=<file>")
endif()
set(_CIQ_CHECK_ONLY TRUE)
file(STRINGS "${CIQ_CASES}" cases)
set(number 0)
foreach(case IN LISTS cases)
  math(EXPR number "${number} + 1")
  string(REPLACE "\t" ";" fields "${case}")
  list(GET fields 0 pin_file)
  list(GET fields 1 params)
  list(GET fields 2 allow_numerics)
  list(GET fields 3 cuda)
  list(GET fields 4 binary_dir)
  list(GET fields 5 ptxas)
  list(GET fields 6 architectures)
  set(top "")
  list(LENGTH fields count)
  if(count GREATER 7)
    list(GET fields 7 top)
  endif()
  string(REPLACE "|" ";" params "${params}")
  string(REPLACE "|" ";" architectures "${architectures}")
  get_filename_component(pin_dir "${pin_file}" DIRECTORY)
  get_filename_component(target "${pin_file}" NAME)
  string(REGEX REPLACE "[.]json$" "" target "${target}")
  set_property(GLOBAL PROPERTY _CIQ_PIN_REFUSED "")
  _ciq_resolve_pin(TARGET "${target}" PIN_FILE "${pin_file}" PIN_DIR "${pin_dir}"
    BINARY_DIR "${binary_dir}" ALLOW_NUMERICS "${allow_numerics}" CUDA_VERSION "${cuda}"
    PTXAS_VERSION "${ptxas}" ARCHITECTURES ${architectures} PARAMS ${params} TOP_DIR "${top}"
    RESULT_PREFIX pin)
  get_property(refused GLOBAL PROPERTY _CIQ_PIN_REFUSED)
  if(refused)
    string(REPLACE "\n" " " refused "${refused}")
    message("case ${number}: refused: ${refused}")
  else()
    string(REPLACE "\n" " " said "${pin_message}")
    message("case ${number}: ${pin_status}: ${said}")
    foreach(arg IN LISTS pin_args)
      message("case ${number} arg: ${arg}")
    endforeach()
    foreach(arch IN LISTS pin_gencode)
      message("case ${number} arg: [${arch}]")
      foreach(arg IN LISTS pin_gencode_${arch})
        message("case ${number} arg: [${arch}] ${arg}")
      endforeach()
    endforeach()
  endif()
endforeach()
