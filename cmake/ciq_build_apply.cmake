# ciq_build's CMake module, part: a pin applied to its target (ciq_build.cmake includes it).
#
# Its entry, _ciq_apply_pin() (first below), gives the target's CUDA compiles their options file: in a
# tuning build the one the driver rewrites per candidate; otherwise the arguments _ciq_resolve_pin()
# (ciq_build_resolve.cmake) decided, written to <build>/ciq/<target>.nvcc-options only when they
# change (so unchanged objects are not rebuilt), and for a pin whose architectures differ, the
# per-architecture files and ciq_build's gencode launcher. _ciq_watch_pin_dir() makes a pin that
# appears or changes later reconfigure.
#
# Separate because this is the only part that changes the user's target and build tree; the decision
# it carries out is made, and tested against Python's, without a target (ciq_build_resolve.cmake).

include_guard(GLOBAL)

# _ciq_apply_pin(TARGET <target> PIN_FILE <file> PIN_DIR <dir> OPTIONS_FILE <file>
#                ALLOW_NUMERICS <bool> [PARAMS <NAME=space>...]
#                OPTIONS_FILE_VAR <out> STATUS_VAR <out> ARGS_VAR <out>
#                DEPENDS_VAR <out>):
# the options file the target's CUDA compiles read. In a tuning build of
# <target> the driver owns it (OPTIONS_FILE_VAR: the one it names); otherwise
# the pinned record is resolved (or refused) and its arguments written to
# OPTIONS_FILE. The outs: that file, the status, the arguments, and the files
# whose change must rebuild the objects.
function(_ciq_apply_pin)
  cmake_parse_arguments(PARSE_ARGV 0 arg ""
    "TARGET;PIN_FILE;PIN_DIR;OPTIONS_FILE;ALLOW_NUMERICS;OPTIONS_FILE_VAR;STATUS_VAR;ARGS_VAR;DEPENDS_VAR"
    "PARAMS")
  set(target "${arg_TARGET}")
  set(options_file "${arg_OPTIONS_FILE}")
  set(fn "ciq_tune_target(${target})")
  string(REGEX MATCH "^[0-9]+\\.[0-9]+" cuda_version "${CMAKE_CUDA_COMPILER_VERSION}")
  _ciq_ptxas_version(ptxas_version)
  set(args "")
  set(depends "")
  if(CIQ_TUNE_TARGET STREQUAL target AND NOT "${CIQ_TUNE_OPTIONS_FILE}" STREQUAL "")
    # Tuning build: the driver owns the options file; the pin is not read.
    cmake_path(ABSOLUTE_PATH CIQ_TUNE_OPTIONS_FILE BASE_DIRECTORY "${CMAKE_BINARY_DIR}"
      NORMALIZE OUTPUT_VARIABLE options_file)
    if(NOT EXISTS "${options_file}")
      file(WRITE "${options_file}" "")  # creates its folder too
    endif()
    set(status tuning)
    message(STATUS "ciq_build: ${target}: tuning build, controls from ${options_file}")
  else()
    if(CIQ_TUNE_TARGET STREQUAL target)
      message(FATAL_ERROR "${fn}: CIQ_TUNE_TARGET is ${target} but "
        "CIQ_TUNE_OPTIONS_FILE is not set; a tuning build needs both.")
    endif()
    # The architectures as they are now; _ciq_finalize_target refuses a later
    # change, which this decision could not see.
    _ciq_build_architectures(architectures unread ${target})
    if(NOT unread STREQUAL "")
      # Unread architectures matter to a pin, which is checked against them; without one the build is as written.
      if(NOT CIQ_DISABLE AND (EXISTS "${arg_PIN_FILE}" OR IS_SYMLINK "${arg_PIN_FILE}"))
        _ciq_unread_architectures(${target} FATAL_ERROR "${unread}"
          ", so the pinned record ${arg_PIN_FILE} cannot be checked against them")
      endif()
      _ciq_unread_architectures(${target} WARNING "${unread}" ". With no pin to apply, ${target} builds as "
        "written, but a tune could not know which architectures it measures, nor pin a record this build can "
        "check against them, so `python -m ciq_build tune ${target}` is refused until they are named")
    endif()
    set_target_properties(${target} PROPERTIES _CIQ_PIN_ARCHITECTURES "${architectures}"
      _CIQ_ARCHITECTURES_READ TRUE _CIQ_ARCHITECTURES_UNREAD "${unread}")
    _ciq_resolve_pin(TARGET ${target} PIN_FILE "${arg_PIN_FILE}" PIN_DIR "${arg_PIN_DIR}"
      BINARY_DIR "${CMAKE_CURRENT_BINARY_DIR}/ciq" ALLOW_NUMERICS "${arg_ALLOW_NUMERICS}"
      CUDA_VERSION "${cuda_version}" PTXAS_VERSION "${ptxas_version}"
      ARCHITECTURES ${architectures} PARAMS ${arg_PARAMS} RESULT_PREFIX pin)
    set(status "${pin_status}")
    set(args "${pin_args}")
    if(status STREQUAL "applied")
      set(depends "${pin_depends}")
    endif()
    message(STATUS "ciq_build: ${target}: ${pin_message}")
    set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${pin_depends})
    _ciq_write_options_file("${options_file}" ${args})
    if(status STREQUAL "applied" AND NOT "${pin_gencode}" STREQUAL "")
      _ciq_gencode_launcher(TARGET ${target} PIN_FILE "${arg_PIN_FILE}" OPTIONS_FILE "${options_file}"
        DEVICE_ARGUMENTS_PREFIX pin_gencode FILES_VAR gencode_files
        ARCHITECTURES ${pin_gencode})
      list(APPEND depends ${gencode_files})
    endif()
  endif()
  set(${arg_OPTIONS_FILE_VAR} "${options_file}" PARENT_SCOPE)
  set(${arg_STATUS_VAR} "${status}" PARENT_SCOPE)
  set(${arg_ARGS_VAR} "${args}" PARENT_SCOPE)
  set(${arg_DEPENDS_VAR} "${depends}" PARENT_SCOPE)
endfunction()

# _ciq_target_cuda_flags(<out> <target> <suffix>): CMAKE_CUDA_FLAGS<suffix> ("" or "_RELEASE") as <target>'s
# compiles get it, split into a list: the variable's value in the directory that made the target, whose value at
# the end of that directory CMake gives its compiles. Not this scope's: a step deferred to the end of the
# top-level directory reads the top level's, and cuda-api-wrappers' examples/CMakeLists.txt appends its -gencode
# flags to CMAKE_CUDA_FLAGS there alone (their architectures were missed: "the only architecture built").
function(_ciq_target_cuda_flags out target suffix)
  get_target_property(directory ${target} SOURCE_DIR)
  get_directory_property(value DIRECTORY "${directory}" DEFINITION "CMAKE_CUDA_FLAGS${suffix}")
  separate_arguments(flags NATIVE_COMMAND "${value}")
  set(${out} "${flags}" PARENT_SCOPE)
endfunction()

# _ciq_build_architectures(<out> <unread_out> <target>): the architectures a pin of <target> is checked against
# and a tune measures: its CUDA_ARCHITECTURES; where those name none (OFF, or unset under policy CMP0104 OLD), the
# architectures whose machine code its own nvcc flags ask for, which are then all it builds (miniBUDE's
# `-arch=sm_90` in CMAKE_CUDA_FLAGS: a pin measured on sm_90 was said to be "tuned for nvcc's default" and
# applied to a build for sm_80). The flags read are CMAKE_CUDA_FLAGS, CMAKE_CUDA_FLAGS_<CONFIG> (a
# single-config build's) and the target's COMPILE_OPTIONS, plain or as $<$<COMPILE_LANGUAGE:CUDA>:...>; the
# options and spellings the rule book's (_ciq_rules_flag_architectures). Configure cannot evaluate other
# generator expressions: where CUDA_ARCHITECTURES holds one, or they name none and an option that may reach
# nvcc puts an architecture option (-arch, -gencode, ...) inside one, the architectures are unread: <out> is ""
# and <unread_out> says why (else it is ""), for the caller to judge whether that matters (a pin checked against
# architectures configure guessed was applied to whatever the expression builds); _ciq_unread_architectures says it.
function(_ciq_build_architectures out unread_out target)
  set(why "")
  set(found "")
  get_target_property(architectures ${target} CUDA_ARCHITECTURES)
  if(architectures MATCHES "[$]<")
    set(why "its CUDA_ARCHITECTURES '${architectures}' hold a generator expression")
  elseif(architectures)
    set(found "${architectures}")
  else()
    _ciq_flag_architectures(found why ${target})
  endif()
  set(${unread_out} "${why}" PARENT_SCOPE)
  set(${out} "${found}" PARENT_SCOPE)
endfunction()

# _ciq_flag_architectures(<out> <why_out> <target>): the architectures <target>'s own nvcc flags build
# (_ciq_build_architectures), or in <why_out> the option that sets one inside a generator expression.
function(_ciq_flag_architectures out why_out target)
  set(why "")
  string(TOUPPER "${CMAKE_BUILD_TYPE}" config)
  _ciq_target_cuda_flags(common ${target} "")
  _ciq_target_cuda_flags(configured ${target} "_${config}")
  set(flags ${common} ${configured})
  get_target_property(options ${target} COMPILE_OPTIONS)
  foreach(option IN LISTS options)
    set(written "${option}")
    if(option MATCHES "^[$]<[$]<COMPILE_LANGUAGE:CUDA>:([^$]*)>$")  # CUDA's alone, as a CMakeLists writes them
      set(option "${CMAKE_MATCH_1}")
    elseif(option MATCHES "^[$]<[$]<COMPILE_LANGUAGE:([A-Za-z_]+)>:" AND NOT CMAKE_MATCH_1 STREQUAL "CUDA")
      continue()  # another language's alone: never nvcc's
    endif()
    if(option MATCHES "[$]<")
      # Its words, as far as they can be told apart without evaluating it: an architecture option among them
      # chooses machine code that configure cannot see.
      string(REGEX REPLACE "[$<>:, \t]+" ";" words "${option}")
      foreach(word IN LISTS words)
        string(REGEX REPLACE "=.*$" "" word "${word}")
        _ciq_rules_matches(chooses arch_option "${word}")
        if(chooses AND why STREQUAL "")
          string(CONCAT why "CUDA_ARCHITECTURES names none, and its compile option '${written}' sets ${word} "
            "inside a generator expression")
        endif()
      endforeach()
    elseif(option MATCHES "^SHELL:(.*)$")
      separate_arguments(words NATIVE_COMMAND "${CMAKE_MATCH_1}")
      list(APPEND flags ${words})
    elseif(option)
      list(APPEND flags "${option}")
    endif()
  endforeach()
  set(found "")
  if(why STREQUAL "")
    _ciq_rules_flag_architectures(found ${flags})
  endif()
  set(${out} "${found}" PARENT_SCOPE)
  set(${why_out} "${why}" PARENT_SCOPE)
endfunction()

# _ciq_unread_architectures(<target> <FATAL_ERROR|WARNING> <why> <consequence>...): say, in one line, that the
# architectures <target> builds cannot be read (_ciq_build_architectures): why, what follows (<consequence>, a
# clause), and what to write instead.
function(_ciq_unread_architectures target level why)
  string(CONCAT consequence ${ARGN})
  _ciq_call_site(site ${target})
  message(${level} "${site}ciq_tune_target(${target}): cannot read which architectures ${target} builds: "
    "${why}, which configure cannot evaluate${consequence}. Name the architectures in CUDA_ARCHITECTURES, "
    "without a generator expression: set_target_properties(${target} PROPERTIES CUDA_ARCHITECTURES 90), or "
    "-DCMAKE_CUDA_ARCHITECTURES=90.")
endfunction()

# _ciq_ptxas_version(<out>): the major.minor of the ptxas beside the CUDA
# compiler (nvcc runs that one), or "" when it cannot be asked; asked once.
function(_ciq_ptxas_version out)
  get_property(known GLOBAL PROPERTY _CIQ_PTXAS_VERSION SET)
  if(NOT known)
    set(version "")
    file(REAL_PATH "${CMAKE_CUDA_COMPILER}" nvcc)
    get_filename_component(bin "${nvcc}" DIRECTORY)
    if(EXISTS "${bin}/ptxas")
      execute_process(COMMAND "${bin}/ptxas" --version OUTPUT_VARIABLE said
        ERROR_QUIET RESULT_VARIABLE failed TIMEOUT 60)
      if(NOT failed AND said MATCHES "V([0-9]+)[.]([0-9]+)")
        set(version "${CMAKE_MATCH_1}.${CMAKE_MATCH_2}")
      endif()
    endif()
    set_property(GLOBAL PROPERTY _CIQ_PTXAS_VERSION "${version}")
  endif()
  get_property(version GLOBAL PROPERTY _CIQ_PTXAS_VERSION)
  set(${out} "${version}" PARENT_SCOPE)
endfunction()

# _ciq_gencode_launcher(TARGET <target> PIN_FILE <file> OPTIONS_FILE <file>
#                       DEVICE_ARGUMENTS_PREFIX <prefix> FILES_VAR <out>
#                       ARCHITECTURES <arch>...):
# a pin whose architectures have different controls (<prefix>_gencode of
# _ciq_resolve_pin): the caller's <prefix>_<arch> holds each architecture's
# device arguments. nvcc has no per-gencode option, so they go to
# <options_file's base>.sm_<arch>.nvcc-options (gencode_options_file in
# ciq_build/pin/apply.py names them alike), and the target compiles through
# ciq_build/compiler/gencode.py, which gives each architecture's cicc and ptxas
# steps its own (the options file keeps what they share). <out>: the files
# whose change must rebuild the target's objects.
function(_ciq_gencode_launcher)
  cmake_parse_arguments(PARSE_ARGV 0 arg ""
    "TARGET;PIN_FILE;OPTIONS_FILE;DEVICE_ARGUMENTS_PREFIX;FILES_VAR" "ARCHITECTURES")
  set(target "${arg_TARGET}")
  set(pin_file "${arg_PIN_FILE}")
  get_target_property(own ${target} CUDA_COMPILER_LAUNCHER)
  if(own OR (NOT "${CMAKE_CUDA_COMPILER_LAUNCHER}" STREQUAL ""
      AND NOT "${CMAKE_CUDA_COMPILER_LAUNCHER}" MATCHES "ptxas_path[.]py"))
    if(NOT own)
      set(own "${CMAKE_CUDA_COMPILER_LAUNCHER}")
    endif()
    _ciq_pin_error(${target} "${pin_file}" "its architectures have different controls, which "
      "ciq_build applies through a CUDA compiler launcher of its own, but the target "
      "already compiles through '${own}'. Drop that launcher for ${target}, or pin one "
      "winner for all its architectures (`python -m ciq_build tune ${target}`).")
    return()
  endif()
  get_property(dir GLOBAL PROPERTY CIQ_BUILD_CMAKE_DIR)
  # A checkout has cmake/ beside ciq_build/; a wheel installs it as ciq_build/cmake.
  set(script "")
  foreach(candidate IN ITEMS "${dir}/../ciq_build/compiler/gencode.py" "${dir}/../compiler/gencode.py")
    if(EXISTS "${candidate}")
      file(REAL_PATH "${candidate}" script)
      break()
    endif()
  endforeach()
  if(NOT "${CIQ_PYTHON}" STREQUAL "")
    set(python "${CIQ_PYTHON}")
  else()
    find_package(Python3 COMPONENTS Interpreter QUIET)
    set(python "${Python3_EXECUTABLE}")
  endif()
  if(script STREQUAL "" OR python STREQUAL "")
    _ciq_pin_error(${target} "${pin_file}" "its architectures have different controls, which "
      "need Python 3 and ciq_build's gencode launcher (found: Python '${python}', launcher "
      "'${script}'). Install Python 3 (or set -DCIQ_PYTHON=<python>) and ciq_build, or pin one "
      "winner for all its architectures (`python -m ciq_build tune ${target}`).")
    return()
  endif()
  string(REGEX REPLACE "[.]nvcc-options$" "" base "${arg_OPTIONS_FILE}")
  set(launcher "${python}" -I -S "${script}")
  set(files "")
  foreach(arch IN LISTS arg_ARCHITECTURES)
    set(file "${base}.sm_${arch}.nvcc-options")
    _ciq_write_options_file("${file}" ${${arg_DEVICE_ARGUMENTS_PREFIX}_${arch}})
    list(APPEND launcher "--arch=${arch}=${file}")
    list(APPEND files "${file}" "${script}")
  endforeach()
  list(APPEND launcher "--")
  set_target_properties(${target} PROPERTIES CUDA_COMPILER_LAUNCHER "${launcher}")
  list(REMOVE_DUPLICATES files)
  set(${arg_FILES_VAR} "${files}" PARENT_SCOPE)
endfunction()

# _ciq_write_options_file(<file> [<argument>...]): an nvcc options file, one argument a line: every
# argument is rule-book plain (no whitespace, quotes or backslashes), so each line is the argument as it
# is. An unchanged file is left untouched, so its mtime does not rebuild the objects that depend on it.
function(_ciq_write_options_file file)
  list(JOIN ARGN "\n" content)
  if(NOT content STREQUAL "")
    string(APPEND content "\n")
  endif()
  if(EXISTS "${file}")
    file(READ "${file}" old)
    if(old STREQUAL content)
      return()
    endif()
  endif()
  file(WRITE "${file}" "${content}")
endfunction()

# _ciq_watch_pin_dir(<pin_dir>): reconfigure when a pin appears there.
function(_ciq_watch_pin_dir pin_dir)
  # A pin that appears, changes or goes away later (a tune writes one) must
  # reconfigure, whatever existed before: depend on the pin dir, or while it
  # does not exist, on its nearest existing parent (its mtime changes when the
  # pin dir is created).
  set(watched "${pin_dir}")
  while(NOT IS_DIRECTORY "${watched}")
    cmake_path(GET watched PARENT_PATH parent)
    if(parent STREQUAL watched)
      break()
    endif()
    set(watched "${parent}")
  endwhile()
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${watched}")
endfunction()
