#[=======================================================================[.rst:
ciq_build
---------

Tune the CUDA compiler for a CMake target and apply the pinned winner.
Loaded by ``find_package(ciq_build)`` (ciq_build-config.cmake); needs CMake
3.24 or newer.

Commands
^^^^^^^^

::

  ciq_tune_target(<target>
                  [BENCHMARK <exe-target> [ARGS <arg>...]
                   | [ARGS_SETS <name:args>... [SCORE <geomean|worst>]]]
                  [METRIC <regex> [UNIT <s|ms|us|ns|rate>]]
                  [OBJECTIVES <objective>...]
                  [PARAMS <NAME=space>...]
                  [CONSTRAINTS <expression>...]
                  [SEARCH_SPACE <space>...]
                  [SEEDS <seed>...]
                  [PIN_DIR <dir>]
                  [TIMEOUT <seconds>]
                  [THREADS_PER_BLOCK <threads> | <expression> [<threads>]]
                  [DESCRIPTION <text>]
                  [ALLOW_NUMERICS])

Registers ``<target>`` (a library or executable with CUDA sources) for
``python -m ciq_build tune <target>`` and applies its pinned record
``<PIN_DIR>/<target>.json``.

``BENCHMARK <exe-target>``
  The executable that measures a candidate (``ARGS``: its arguments); it
  prints ``CIQ_METRIC time_ms=<value>`` lines (docs/protocol.md: the line protocol).
  Needed by the benchmark objectives (``time``).
``ARGS_SETS <name:args>...``, ``SCORE <geomean|worst>``
  Several problem sizes instead of ``ARGS``, e.g. ``ARGS_SETS "small:-n 1024"
  "large:-n 65536"`` (the arguments split like a shell command line). Each
  run runs the benchmark once per size; a candidate's score is the geometric
  mean of its per-size ratios to the defaults (``SCORE geomean``, the
  default) or its worst ratio (``SCORE worst``). The journal keeps each size's
  figures (``time_ms@small``).
``METRIC <regex>``, ``UNIT <s|ms|us|ns|rate>``
  For a benchmark that prints its own figure instead: the regex's first
  group is the number, in ``UNIT`` (default ``ms``): a time, or a rate that
  is higher when better (``TFLOPS``, ``GFLOP/s``, ``GB/s``, ``items/s``),
  which ``time`` reads as the time a unit of work takes. Only with ``BENCHMARK``.
``OBJECTIVES <objective>...``
  What the search minimises or maximises (README: "Objectives"); none: the
  driver's default.
``PARAMS <NAME=space>...``
  Preprocessor values the search may choose (``-DNAME=VALUE``).
``CONSTRAINTS <expression>...``
  Expressions over the PARAMS names (``"BX*BY <= 1024"``) every
  configuration the search proposes meets (docs/cmake.md: ``CONSTRAINTS``).
``SEARCH_SPACE <space>...``
  The compiler controls the search may change.
``SEEDS <seed>...``
  Known-good configurations the search evaluates first (docs/cmake.md: ``SEEDS``):
  a pinned record, an ACF, a folder of them (relative paths from
  ``CMAKE_CURRENT_SOURCE_DIR``), or controls such as ``"-Xptxas=-O2
  -DTILE=32"``. ``tune --seed-from`` replaces them.
``PIN_DIR <dir>``
  Where the pinned record lives, relative to ``CMAKE_CURRENT_SOURCE_DIR``
  (default ``${CMAKE_CURRENT_SOURCE_DIR}/ciq``); a plain path, no ``..``.
``TIMEOUT <seconds>``
  A candidate's build or benchmark limit (default 60).
``THREADS_PER_BLOCK <threads> | <expression> [<threads>]``
  The threads a block of the target's kernels has, for the ``occupancy``
  objective: a number, or a PARAMS name or an expression over them
  (``"(128/TM)*(128/TN)"``, the CONSTRAINTS language) that each candidate's
  values give; then the defaults' number, where the sources' own ``#define``
  of a name is not one (docs/cmake.md: ``THREADS_PER_BLOCK``).
``DESCRIPTION <text>``
  What the target is, in one line; ``python -m ciq_build show`` prints it.
``ALLOW_NUMERICS``
  The search may change floating-point results.

Sources, ``CUDA_ARCHITECTURES`` and the benchmark target may still be added
after the call (the rest is finished at the end of the top-level
CMakeLists.txt), but ``CUDA_ARCHITECTURES`` must be set before it.

Cache variables read
^^^^^^^^^^^^^^^^^^^^

``CIQ_DISABLE``
  ON: ignore every pinned record (status ``disabled``).
``CIQ_STRICT``
  ON: a toolkit or architecture mismatch refuses the pin, instead of a
  warning and status ``skipped``.
``CIQ_PYTHON``
  The Python that runs the per-architecture gencode launcher (default: the
  one ``find_package(Python3)`` finds).
``CIQ_TUNE_TARGET``, ``CIQ_TUNE_OPTIONS_FILE``
  Set by the tuning driver in its scratch trees (a tuning build): the
  target's CUDA compiles read ``CIQ_TUNE_OPTIONS_FILE``, which the driver
  rewrites for every candidate; the pin is not read.
``CIQ_TUNE_ARCHITECTURES``
  ``tune --architecture``: the tuned target's one architecture.

Target properties set (read them, never set them)
^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^

``CIQ_PIN_STATUS``
  ``applied`` | ``none`` | ``disabled`` | ``skipped`` | ``tuning``
``CIQ_PIN_FILE``
  The pinned record consulted.
``CIQ_NVCC_ARGUMENTS``
  The arguments written to the options file.
``CIQ_OPTIONS_FILE``
  The options file the target's CUDA compiles read.

What it sets and writes
^^^^^^^^^^^^^^^^^^^^^^^

One mechanism serves the real build and the tuning build: every tuned
target's CUDA compiles get ``--options-file=<file>``, and that file is in the
``OBJECT_DEPENDS`` of the target's CUDA sources, so a change rebuilds exactly
those objects.

``<CMAKE_CURRENT_BINARY_DIR>/ciq/<target>.nvcc-options``
  The real build's options file, written from the validated pinned record
  (empty without one).
``<...>/ciq/<target>.sm_<arch>.nvcc-options`` and ``CUDA_COMPILER_LAUNCHER``
  Only for a pin whose architectures have different controls: each
  architecture's device arguments, applied through ciq_build's gencode
  launcher (a target with a launcher of its own refuses such a pin).
``<CMAKE_BINARY_DIR>/ciq/targets/<target>.json``
  The target's manifest for the driver (file(GENERATE)); its JSON Schema is
  docs/target-manifest.schema.json (ciq_build/project/manifest_schema.py).
``CMAKE_CONFIGURE_DEPENDS``
  The pin dir (or its nearest existing parent) and the pin's files: a pin
  that appears, changes or goes away reconfigures.
Global properties ``CIQ_BUILD_TARGETS`` (the registered targets) and
``CIQ_BUILD_CMAKE_DIR`` (this folder).
#]=======================================================================]

include_guard(GLOBAL)

if(CMAKE_VERSION VERSION_LESS 3.24)
  message(FATAL_ERROR
    "ciq_build needs CMake 3.24 or newer (this is ${CMAKE_VERSION}); "
    "install a newer one with `pip install cmake`.")
endif()

# Functions record the policies in force where they are defined; pin them so
# that the caller's cmake_minimum_required() cannot change their behaviour.
cmake_policy(PUSH)
cmake_policy(VERSION 3.24...3.31)

# A directory-scoped variable would be invisible to a second subdirectory
# that finds the package (the include guard skips the file there).
set_property(GLOBAL PROPERTY CIQ_BUILD_CMAKE_DIR "${CMAKE_CURRENT_LIST_DIR}")

include("${CMAKE_CURRENT_LIST_DIR}/ciq_build_rules.cmake")

# ---------------------------------------------------------------------------
# Small helpers
# ---------------------------------------------------------------------------

# _ciq_json_string(<out> <value>): <value> as a quoted JSON string.
function(_ciq_json_string out value)
  string(REPLACE "\\" "\\\\" value "${value}")
  string(REPLACE "\"" "\\\"" value "${value}")
  string(REPLACE "\n" "\\n" value "${value}")
  string(REPLACE "\r" "\\r" value "${value}")
  string(REPLACE "\t" "\\t" value "${value}")
  # The remaining control characters are rare in CMake strings; \u00XX them.
  foreach(code RANGE 1 31)
    if(code EQUAL 9 OR code EQUAL 10 OR code EQUAL 13)
      continue()
    endif()
    string(ASCII ${code} char)
    string(FIND "${value}" "${char}" position)
    if(NOT position EQUAL -1)
      math(EXPR hex "${code}" OUTPUT_FORMAT HEXADECIMAL)
      string(REGEX REPLACE "^0x" "" hex "${hex}")
      string(LENGTH "${hex}" length)
      if(length EQUAL 1)
        set(hex "0${hex}")
      endif()
      string(REPLACE "${char}" "\\u00${hex}" value "${value}")
    endif()
  endforeach()
  set(${out} "\"${value}\"" PARENT_SCOPE)
endfunction()

# _ciq_json_array(<out> [<item>...]): the items as a JSON array of strings.
function(_ciq_json_array out)
  set(items "")
  foreach(item IN LISTS ARGN)
    _ciq_json_string(quoted "${item}")
    list(APPEND items "${quoted}")
  endforeach()
  list(JOIN items ", " joined)
  set(${out} "[${joined}]" PARENT_SCOPE)
endfunction()

# _ciq_json_strings(<out> <json> <key>...): the strings of the array at <key>...
# as a list, empty when there is none (the rule book has checked each item).
function(_ciq_json_strings out json)
  set(items "")
  string(JSON type ERROR_VARIABLE missing TYPE "${json}" ${ARGN})
  if(NOT missing AND type STREQUAL "ARRAY")
    string(JSON count LENGTH "${json}" ${ARGN})
    if(count GREATER 0)
      math(EXPR last "${count} - 1")
      foreach(index RANGE ${last})
        string(JSON item GET "${json}" ${ARGN} ${index})
        list(APPEND items "${item}")
      endforeach()
    endif()
  endif()
  set(${out} "${items}" PARENT_SCOPE)
endfunction()

# _ciq_genex_literal(<out> <text>): <text> protected from generator-expression
# evaluation in file(GENERATE), by spelling every '$' as $<1:$>.
function(_ciq_genex_literal out text)
  string(REPLACE "$" "$<1:$>" text "${text}")
  set(${out} "${text}" PARENT_SCOPE)
endfunction()

# _ciq_write_if_changed(<file> <content>): leave an unchanged file untouched,
# so its mtime does not trigger rebuilds of the objects that depend on it.
function(_ciq_write_if_changed file content)
  if(EXISTS "${file}")
    file(READ "${file}" old)
    if(old STREQUAL content)
      return()
    endif()
  endif()
  file(WRITE "${file}" "${content}")
endfunction()

# _ciq_pin_error(<target> <pin_file> <message>...): refuse a pinned record.
# Under _CIQ_CHECK_ONLY (ciq_build_check_pin.cmake, many records in one
# process) the refusal goes to the global property _CIQ_PIN_REFUSED instead,
# and the caller's _ciq_pin_stop() returns from the checking function.
function(_ciq_pin_error target pin_file)
  _ciq_joined(text 2 ${ARGC})
  _ciq_pin_refuse("ciq_tune_target(${target}): refusing the pinned record ${pin_file}: ${text}")
endfunction()

# _ciq_joined(<out> <first> <count>): the caller's arguments from <first> on, joined
# as written (ARGV<n> keeps a ';' in one, which ${ARGN} would split away).
macro(_ciq_joined out first count)
  set(${out} "")
  if(${count} GREATER ${first})
    math(EXPR _ciq_last "${count} - 1")
    foreach(_ciq_index RANGE ${first} ${_ciq_last})
      string(APPEND ${out} "${ARGV${_ciq_index}}")
    endforeach()
  endif()
endmacro()

# _ciq_pin_refuse(<message>...): refuse a pinned record with a message that
# already names the target and the record (a CIQ_STRICT mismatch's warning).
function(_ciq_pin_refuse)
  _ciq_joined(text 0 ${ARGC})
  if(_CIQ_CHECK_ONLY)
    set_property(GLOBAL PROPERTY _CIQ_PIN_REFUSED "${text}")
    return()
  endif()
  message(FATAL_ERROR "${text}")
endfunction()

macro(_ciq_pin_stop)
  get_property(_ciq_refused GLOBAL PROPERTY _CIQ_PIN_REFUSED)
  if(_ciq_refused)
    return()
  endif()
endmacro()

# _ciq_option_name(<out> <flag>): what two flags must not both set
# (controls.py _option_name): "-maxrregcount", "-Xptxas=-O", ...
function(_ciq_option_name out flag)
  set(prefix "")
  if(flag MATCHES "^-Xptxas=(.*)$")
    set(prefix "-Xptxas=")
    set(flag "${CMAKE_MATCH_1}")
  endif()
  if(flag MATCHES "^-O[0-9]")
    set(name "-O")
  else()
    string(REGEX REPLACE "=.*$" "" name "${flag}")
  endif()
  set(${out} "${prefix}${name}" PARENT_SCOPE)
endfunction()

# _ciq_read_acf(TARGET <target> PIN_FILE <file> PIN_DIR <dir> JSON <record> WHERE <name>
#               KEYS <key>... PATH_VAR <out> KIND_VAR <out>): the Advanced Controls File
# of the controls at KEYS, if any: one of this target's, a regular file inside the
# pin dir with the sha256 it was measured with (pin/read.py _read_acf). The outs:
# its path and kind ("" for none).
function(_ciq_read_acf)
  cmake_parse_arguments(PARSE_ARGV 0 arg "" "TARGET;PIN_FILE;PIN_DIR;JSON;WHERE;PATH_VAR;KIND_VAR" "KEYS")
  set(target "${arg_TARGET}")
  set(pin_file "${arg_PIN_FILE}")
  set(json "${arg_JSON}")
  set(where "${arg_WHERE}")
  set(fix "Restore it from version control, or retune with `python -m ciq_build tune ${target}`.")
  set(acf_path "")
  set(acf_kind "")
  string(JSON type ERROR_VARIABLE missing TYPE "${json}" ${arg_KEYS} acf)
  if(NOT missing AND type STREQUAL "OBJECT")
    string(JSON acf_name GET "${json}" ${arg_KEYS} acf file)
    string(JSON acf_sha GET "${json}" ${arg_KEYS} acf sha256)
    string(JSON acf_kind GET "${json}" ${arg_KEYS} acf compiler)
    # One of this target's ACFs (pin/record.py is_targets_acf): <target>.acf,
    # <target>.<...>.acf or <target>-<...>.acf.
    string(LENGTH "${target}" prefix_length)
    string(LENGTH "${acf_name}" name_length)
    set(own FALSE)
    if(name_length GREATER prefix_length AND acf_name MATCHES "[.]acf$")
      string(SUBSTRING "${acf_name}" 0 ${prefix_length} head)
      string(SUBSTRING "${acf_name}" ${prefix_length} 1 separator)
      if(head STREQUAL target AND separator MATCHES "^[.-]$")
        set(own TRUE)
      endif()
    endif()
    if(NOT own)
      _ciq_pin_error(${target} "${pin_file}" "${where}.acf.file is '${acf_name}', which is not an "
        "ACF of this target: its name must be ${target}.acf or ${target}.<...>.acf (as tune pins it). ${fix}")
      _ciq_pin_stop()
    endif()
    set(acf_path "${arg_PIN_DIR}/${acf_name}")
    if(NOT EXISTS "${acf_path}" AND NOT IS_SYMLINK "${acf_path}")
      _ciq_pin_error(${target} "${pin_file}" "its ACF ${acf_path} does not exist. ${fix}")
      _ciq_pin_stop()
    endif()
    _ciq_rules_check_file(problem "${acf_path}" acf_bytes)
    if(NOT problem STREQUAL "")
      _ciq_pin_error(${target} "${pin_file}" "its ACF ${problem}. ${fix}")
      _ciq_pin_stop()
    endif()
    file(SHA256 "${acf_path}" actual_sha)
    if(NOT actual_sha STREQUAL acf_sha)
      _ciq_pin_error(${target} "${pin_file}" "the sha256 of ${acf_path} is "
        "${actual_sha}, the record says ${acf_sha}: the ACF is not the one that "
        "was measured. ${fix}")
      _ciq_pin_stop()
    endif()
  endif()

  set(${arg_PATH_VAR} "${acf_path}" PARENT_SCOPE)
  set(${arg_KIND_VAR} "${acf_kind}" PARENT_SCOPE)
endfunction()

# _ciq_read_defines(TARGET <target> PIN_FILE <file> JSON <record> WHERE <name> KEYS <key>...
#                   [PARAMS <NAME=space>...] DEFINES_VAR <out>): the -D parameters of the
# controls at KEYS, each a PARAMS name of the target with a value in its domain
# (pin/apply.py check_defines); <out>: -DNAME=VALUE, sorted by name.
function(_ciq_read_defines)
  cmake_parse_arguments(PARSE_ARGV 0 arg "" "TARGET;PIN_FILE;JSON;WHERE;DEFINES_VAR" "KEYS;PARAMS")
  set(target "${arg_TARGET}")
  set(pin_file "${arg_PIN_FILE}")
  set(json "${arg_JSON}")
  set(where "${arg_WHERE}")
  set(declared "")
  foreach(spec IN LISTS arg_PARAMS)
    if(spec MATCHES "^[ \t\n]*([A-Za-z_][A-Za-z0-9_]*)[ \t\n]*=(.*)$")
      list(APPEND declared "${CMAKE_MATCH_1}")
      string(STRIP "${CMAKE_MATCH_2}" domain_${CMAKE_MATCH_1})
    endif()
  endforeach()
  set(defines "")
  string(JSON type ERROR_VARIABLE missing TYPE "${json}" ${arg_KEYS} defines)
  if(NOT missing AND type STREQUAL "OBJECT")
    string(JSON count LENGTH "${json}" ${arg_KEYS} defines)
    if(count GREATER 0)
      math(EXPR last "${count} - 1")
      set(names "")
      foreach(index RANGE ${last})
        string(JSON name MEMBER "${json}" ${arg_KEYS} defines ${index})
        list(APPEND names "${name}")
      endforeach()
      list(SORT names)
      foreach(name IN LISTS names)
        string(JSON value GET "${json}" ${arg_KEYS} defines "${name}")
        if(NOT name IN_LIST declared)
          list(JOIN declared ", " shown)
          _ciq_pin_error(${target} "${pin_file}" "${where}.defines.${name} is "
            "refused: only the PARAMS of ciq_tune_target(${target}) may be defined "
            "(declared: ${shown}). Add ${name} to PARAMS and retune, or remove it "
            "from the record.")
          _ciq_pin_stop()
        endif()
        _ciq_in_domain(inside "${domain_${name}}" "${value}")
        if(NOT inside)
          _ciq_pin_error(${target} "${pin_file}" "${where}.defines.${name}='${value}' "
            "is outside its declared domain '${domain_${name}}'. Retune, or set a "
            "value that PARAMS allows.")
          _ciq_pin_stop()
        endif()
        list(APPEND defines "-D${name}=${value}")
      endforeach()
    endif()
  endif()

  set(${arg_DEFINES_VAR} "${defines}" PARENT_SCOPE)
endfunction()

# _ciq_read_controls(TARGET <target> PIN_FILE <file> PIN_DIR <dir> ALLOW_NUMERICS <bool>
#                    JSON <record> WHERE <name> KEYS <key>... [PARAMS <NAME=space>...]
#                    FLAGS_VAR <out> DEFINES_VAR <out> ACF_VAR <out> ACF_KIND_VAR <out>):
# the controls object at KEYS of the record (the top-level "controls", or an
# entry's "per_architecture <arch> controls"), checked as ciq_build/pin/read.py
# checks each Controls against the target's PARAMS; WHERE names it in messages.
# The outs: its flags (sorted, unique), its defines (-DNAME=VALUE, sorted by
# name), its ACF's path (or "") and the ACF's kind.
function(_ciq_read_controls)
  cmake_parse_arguments(PARSE_ARGV 0 arg ""
    "TARGET;PIN_FILE;PIN_DIR;ALLOW_NUMERICS;JSON;WHERE;FLAGS_VAR;DEFINES_VAR;ACF_VAR;ACF_KIND_VAR" "KEYS;PARAMS")
  set(target "${arg_TARGET}")
  set(pin_file "${arg_PIN_FILE}")
  set(json "${arg_JSON}")
  set(where "${arg_WHERE}")
  set(fix "Restore it from version control, or retune with `python -m ciq_build tune ${target}`.")
  # Flags: the rule book checked each; here, how they combine.
  _ciq_json_strings(flags "${json}" ${arg_KEYS} flags)
  list(REMOVE_DUPLICATES flags)
  list(SORT flags)
  set(options "")
  foreach(flag IN LISTS flags)
    _ciq_option_name(option "${flag}")
    if(option IN_LIST options)
      _ciq_pin_error(${target} "${pin_file}" "two flags set the compiler option "
        "${option}; keep one of them. ${fix}")
      _ciq_pin_stop()
    endif()
    list(APPEND options "${option}")
  endforeach()
  _ciq_rules_conflicts(conflict "${flags}")
  if(NOT conflict STREQUAL "")
    _ciq_pin_error(${target} "${pin_file}" "ptxas refuses the flags ${conflict} "
      "together; keep one of them. ${fix}")
    _ciq_pin_stop()
  endif()

  _ciq_read_acf(TARGET ${target} PIN_FILE "${pin_file}" PIN_DIR "${arg_PIN_DIR}" JSON "${json}"
    WHERE "${where}" KEYS ${arg_KEYS} PATH_VAR acf_path KIND_VAR acf_kind)
  _ciq_pin_stop()

  # What this target allows: numerics flags, and -D of its own PARAMS only.
  foreach(flag IN LISTS flags)
    _ciq_rules_is_numerics(numerics "${flag}")
    if(numerics AND NOT arg_ALLOW_NUMERICS)
      _ciq_pin_error(${target} "${pin_file}" "flag '${flag}' changes floating-point "
        "results, and ciq_tune_target(${target}) does not say ALLOW_NUMERICS. "
        "Add ALLOW_NUMERICS, or retune without numerics flags.")
      _ciq_pin_stop()
    endif()
  endforeach()
  _ciq_read_defines(TARGET ${target} PIN_FILE "${pin_file}" JSON "${json}" WHERE "${where}" KEYS ${arg_KEYS}
    PARAMS ${arg_PARAMS} DEFINES_VAR defines)
  _ciq_pin_stop()

  set(${arg_FLAGS_VAR} "${flags}" PARENT_SCOPE)
  set(${arg_DEFINES_VAR} "${defines}" PARENT_SCOPE)
  set(${arg_ACF_VAR} "${acf_path}" PARENT_SCOPE)
  set(${arg_ACF_KIND_VAR} "${acf_kind}" PARENT_SCOPE)
endfunction()

# _ciq_read_record_json(TARGET <target> PIN_FILE <file> JSON_VAR <out>): the
# record's text, through the rule book's three layers (a regular file within its
# size limit, the strict JSON subset, each field), its schema and its target
# checked (pin/read.py read_record's first steps).
function(_ciq_read_record_json)
  cmake_parse_arguments(PARSE_ARGV 0 arg "" "TARGET;PIN_FILE;JSON_VAR" "")
  set(target "${arg_TARGET}")
  set(pin_file "${arg_PIN_FILE}")
  set(fix "Restore it from version control, or retune with `python -m ciq_build tune ${target}`.")
  _ciq_rules_read_file(json problem "${pin_file}" record_bytes)
  if(problem STREQUAL "")
    _ciq_rules_syntax(problem "${json}")
    if(NOT problem STREQUAL "")
      set(problem "it ${problem}")
    endif()
  endif()
  if(NOT problem STREQUAL "")
    _ciq_pin_error(${target} "${pin_file}" "${problem}. ${fix}")
    return()
  endif()
  get_property(rules_schema GLOBAL PROPERTY _CIQ_RULES_SCHEMA)
  string(JSON schema_type ERROR_VARIABLE error TYPE "${json}" schema)
  if(schema_type STREQUAL "NUMBER")
    string(JSON schema GET "${json}" schema)
    if(schema MATCHES "^-?[0-9]+$" AND NOT schema STREQUAL rules_schema)
      _ciq_pin_error(${target} "${pin_file}" "schema is ${schema}, this ciq_build "
        "reads schema ${rules_schema}. Upgrade ciq_build, or retune with "
        "`python -m ciq_build tune ${target}`.")
      return()
    endif()
  endif()
  _ciq_rules_fields(where problem "${json}")
  if(NOT problem STREQUAL "")
    _ciq_pin_error(${target} "${pin_file}" "${where} ${problem}. ${fix}")
    return()
  endif()
  string(JSON record_target GET "${json}" target)
  if(NOT record_target STREQUAL target)
    _ciq_pin_error(${target} "${pin_file}" "its \"target\" is '${record_target}', "
      "not '${target}'. Was it copied from another target? Retune this one.")
    return()
  endif()
  set(${arg_JSON_VAR} "${json}" PARENT_SCOPE)
endfunction()

# _ciq_check_summary(TARGET <target> PIN_FILE <file> JSON <record> WHERE <name>
#                    OBJECTIVES <count> KEYS <key>...): the summary (baseline or
# winner) at KEYS, if any, has one score and one spread per objective.
function(_ciq_check_summary)
  cmake_parse_arguments(PARSE_ARGV 0 arg "" "TARGET;PIN_FILE;JSON;WHERE;OBJECTIVES" "KEYS")
  string(JSON type ERROR_VARIABLE missing TYPE "${arg_JSON}" ${arg_KEYS})
  if(missing OR NOT type STREQUAL "OBJECT")
    return()
  endif()
  string(JSON scores LENGTH "${arg_JSON}" ${arg_KEYS} scores)
  string(JSON spread LENGTH "${arg_JSON}" ${arg_KEYS} spread)
  if(NOT scores EQUAL arg_OBJECTIVES OR NOT spread EQUAL arg_OBJECTIVES)
    _ciq_pin_error(${arg_TARGET} "${arg_PIN_FILE}" "${arg_WHERE} needs one score and one "
      "spread per objective (${arg_OBJECTIVES}), has ${scores} and ${spread}. Restore it from "
      "version control, or retune with `python -m ciq_build tune ${arg_TARGET}`.")
  endif()
endfunction()

# _ciq_read_objectives(TARGET <target> PIN_FILE <file> JSON <record> COUNT_VAR <out>):
# the record's objectives, each named once, and its summaries' lengths; <out>: how many.
function(_ciq_read_objectives)
  cmake_parse_arguments(PARSE_ARGV 0 arg "" "TARGET;PIN_FILE;JSON;COUNT_VAR" "")
  set(count 0)
  string(JSON type ERROR_VARIABLE missing TYPE "${arg_JSON}" objectives)
  if(NOT missing)
    string(JSON count LENGTH "${arg_JSON}" objectives)
  endif()
  set(names "")
  if(count GREATER 0)
    math(EXPR last "${count} - 1")
    foreach(index RANGE ${last})
      string(JSON name GET "${arg_JSON}" objectives ${index} name)
      if(name IN_LIST names)
        _ciq_pin_error(${arg_TARGET} "${arg_PIN_FILE}" "objectives name '${name}' twice. Restore it "
          "from version control, or retune with `python -m ciq_build tune ${arg_TARGET}`.")
        return()
      endif()
      list(APPEND names "${name}")
    endforeach()
  endif()
  foreach(summary IN ITEMS baseline winner)
    _ciq_check_summary(TARGET ${arg_TARGET} PIN_FILE "${arg_PIN_FILE}" JSON "${arg_JSON}" WHERE ${summary}
      OBJECTIVES ${count} KEYS ${summary})
    _ciq_pin_stop()
  endforeach()
  set(${arg_COUNT_VAR} "${count}" PARENT_SCOPE)
endfunction()

# _ciq_read_architectures(TARGET <target> PIN_FILE <file> JSON <record> OBJECTIVES <count>
#                         WRITTEN_VAR <out> TUNED_VAR <out> ENTRIES_VAR <out>): the
# record's toolchain.architectures as written and in one spelling, each naming an
# architecture (pin/read.py _check_named_architectures: reduced to nothing, the list
# would switch the architecture guard off), and its per_architecture entries, each
# for one of them, with one score and one spread per objective.
function(_ciq_read_architectures)
  cmake_parse_arguments(PARSE_ARGV 0 arg "" "TARGET;PIN_FILE;JSON;OBJECTIVES;WRITTEN_VAR;TUNED_VAR;ENTRIES_VAR" "")
  set(target "${arg_TARGET}")
  set(json "${arg_JSON}")
  set(fix "Restore it from version control, or retune with `python -m ciq_build tune ${target}`.")
  _ciq_json_strings(written "${json}" toolchain architectures)
  string(JSON type ERROR_VARIABLE missing TYPE "${json}" toolchain architectures)
  if(NOT missing AND written STREQUAL "")
    _ciq_pin_error(${target} "${arg_PIN_FILE}" "toolchain.architectures is empty; list the "
      "architectures the record was tuned for (e.g. [\"90a\"]), or leave the field out for "
      "nvcc's default. ${fix}")
    return()
  endif()
  set(index 0)
  foreach(arch IN LISTS written)
    _ciq_architecture_set(name "${arch}")
    _ciq_rules_matches(ok tuned_arch "${name}")
    if(NOT ok)
      _ciq_pin_error(${target} "${arg_PIN_FILE}" "toolchain.architectures[${index}] is '${arch}', "
        "which names no CUDA architecture (e.g. 90a, sm_100a, 120, native). ${fix}")
      return()
    endif()
    math(EXPR index "${index} + 1")
  endforeach()
  _ciq_architecture_set(tuned ${written})
  set(entries "")
  string(JSON type ERROR_VARIABLE missing TYPE "${json}" per_architecture)
  if(NOT missing AND type STREQUAL "OBJECT")
    string(JSON count LENGTH "${json}" per_architecture)
    set(keys "")
    if(count GREATER 0)
      math(EXPR last "${count} - 1")
      foreach(index RANGE ${last})
        string(JSON arch MEMBER "${json}" per_architecture ${index})
        list(APPEND keys "${arch}")
      endforeach()
    endif()
    foreach(arch IN LISTS keys)
      if(NOT arch IN_LIST tuned)
        list(JOIN tuned ", " shown)
        if(shown STREQUAL "")
          set(shown none)
        endif()
        _ciq_pin_error(${target} "${arg_PIN_FILE}" "per_architecture.${arch} is an entry for "
          "${arch}, which toolchain.architectures does not name (${shown}); add ${arch} "
          "there, or remove the entry. ${fix}")
        return()
      endif()
      list(APPEND entries "${arch}")
      foreach(summary IN ITEMS baseline winner)
        _ciq_check_summary(TARGET ${target} PIN_FILE "${arg_PIN_FILE}" JSON "${json}"
          WHERE "per_architecture.${arch}.${summary}" OBJECTIVES ${arg_OBJECTIVES}
          KEYS per_architecture ${arch} ${summary})
        _ciq_pin_stop()
      endforeach()
    endforeach()
  endif()
  set(${arg_WRITTEN_VAR} "${written}" PARENT_SCOPE)
  set(${arg_TUNED_VAR} "${tuned}" PARENT_SCOPE)
  set(${arg_ENTRIES_VAR} "${entries}" PARENT_SCOPE)
endfunction()

# _ciq_read_applied(TARGET <target> PIN_FILE <file> PIN_DIR <dir> ALLOW_NUMERICS <bool>
#                   JSON <record> TUNED <arch>... ENTRIES <arch>... [PARAMS <NAME=space>...]
#                   RESULT_PREFIX <prefix>): the controls each architecture gets, its
# entry's, else the record's ("any": a record that names no architecture), each
# checked (_ciq_read_controls); their -D parameters must agree, since a -D reaches
# the host compile, which nvcc runs once for all architectures (pin/read.py
# shared_defines_problem). Sets <prefix>_applied, <prefix>_defines, <prefix>_acf
# (every ACF), <prefix>_acf_kind (ptxas when any is) and, per applied architecture,
# <prefix>_flags_<arch>, <prefix>_acf_<arch>, <prefix>_acf_kind_<arch>.
function(_ciq_read_applied)
  cmake_parse_arguments(PARSE_ARGV 0 arg "" "TARGET;PIN_FILE;PIN_DIR;ALLOW_NUMERICS;JSON;RESULT_PREFIX"
    "TUNED;ENTRIES;PARAMS")
  set(out "${arg_RESULT_PREFIX}")
  set(all_acfs "")
  foreach(arch IN ITEMS any ${arg_ENTRIES})
    set(where controls)
    set(keys controls)
    if(NOT arch STREQUAL "any")
      set(where "per_architecture.${arch}.controls")
      set(keys per_architecture ${arch} controls)
    endif()
    _ciq_read_controls(TARGET ${arg_TARGET} PIN_FILE "${arg_PIN_FILE}" PIN_DIR "${arg_PIN_DIR}"
      ALLOW_NUMERICS "${arg_ALLOW_NUMERICS}" JSON "${arg_JSON}" WHERE "${where}" KEYS ${keys}
      PARAMS ${arg_PARAMS}
      FLAGS_VAR flags_${arch} DEFINES_VAR defines_${arch} ACF_VAR acf_${arch} ACF_KIND_VAR kind_${arch})
    _ciq_pin_stop()
    list(APPEND all_acfs "${acf_${arch}}")
  endforeach()
  set(applied "${arg_TUNED}")
  if(applied STREQUAL "")
    set(applied any)
  endif()
  set(first "")
  set(acf_kind "")
  foreach(arch IN LISTS applied)
    set(where_${arch} "per_architecture.${arch}.controls")
    if(NOT arch IN_LIST arg_ENTRIES)
      set(where_${arch} "controls")
      foreach(what IN ITEMS flags defines acf kind)
        set(${what}_${arch} "${${what}_any}")
      endforeach()
    endif()
    if(first STREQUAL "")
      set(first "${arch}")
    elseif(NOT "${defines_${arch}}" STREQUAL "${defines_${first}}")
      _ciq_pin_error(${arg_TARGET} "${arg_PIN_FILE}" "${where_${arch}}.defines differ from "
        "${where_${first}}.defines: a -D parameter reaches the host compile, which nvcc "
        "runs once for every architecture. Give every architecture the same PARAMS values "
        "(tune each with --architecture and the same values), or tune all architectures "
        "together. Restore it from version control, or retune with `python -m ciq_build tune ${arg_TARGET}`.")
      return()
    endif()
    if(acf_kind STREQUAL "" OR kind_${arch} STREQUAL "ptxas")
      set(acf_kind "${kind_${arch}}")
    endif()
    set(${out}_flags_${arch} "${flags_${arch}}" PARENT_SCOPE)
    set(${out}_acf_${arch} "${acf_${arch}}" PARENT_SCOPE)
    set(${out}_acf_kind_${arch} "${kind_${arch}}" PARENT_SCOPE)
  endforeach()
  set(${out}_applied "${applied}" PARENT_SCOPE)
  set(${out}_defines "${defines_${first}}" PARENT_SCOPE)
  set(${out}_acf "${all_acfs}" PARENT_SCOPE)
  set(${out}_acf_kind "${acf_kind}" PARENT_SCOPE)
endfunction()

# _ciq_read_pin(TARGET <target> PIN_FILE <file> PIN_DIR <dir> ALLOW_NUMERICS <bool>
#               [PARAMS <NAME=space>...] RESULT_PREFIX <prefix>)
# Validates a pinned record against the rule book, in the order of
# ciq_build/pin/read.py (read_record, then pin/apply.py pin_arguments' checks), and sets,
# in the caller:
#   <prefix>_applied        the architectures it applies to (one spelling), or
#                           "any" for a record that names none
#   <prefix>_entries        those with a per_architecture entry
#   <prefix>_flags_<arch>, <prefix>_acf_<arch>, <prefix>_acf_kind_<arch>
#                           each applied architecture's flags, ACF path ("" for
#                           none) and ACF kind
#   <prefix>_defines        the -D arguments (the same for every architecture)
#   <prefix>_architectures  its toolchain.architectures, as written
#   <prefix>_acf            every ACF's path
#   <prefix>_acf_kind       "", "ptxas" or "nvcc" (ptxas when any is)
#   <prefix>_cuda           its toolchain.cuda (major.minor)
#   <prefix>_ptxas          its ptxas major.minor, or ""
function(_ciq_read_pin)
  cmake_parse_arguments(PARSE_ARGV 0 arg "" "TARGET;PIN_FILE;PIN_DIR;ALLOW_NUMERICS;RESULT_PREFIX" "PARAMS")
  set(out "${arg_RESULT_PREFIX}")
  set(given TARGET ${arg_TARGET} PIN_FILE "${arg_PIN_FILE}")
  _ciq_read_record_json(${given} JSON_VAR json)
  _ciq_pin_stop()
  _ciq_read_objectives(${given} JSON "${json}" COUNT_VAR objectives)
  _ciq_pin_stop()
  _ciq_read_architectures(${given} JSON "${json}" OBJECTIVES ${objectives}
    WRITTEN_VAR written TUNED_VAR tuned ENTRIES_VAR entries)
  _ciq_pin_stop()
  _ciq_read_applied(${given} PIN_DIR "${arg_PIN_DIR}" ALLOW_NUMERICS "${arg_ALLOW_NUMERICS}" JSON "${json}"
    TUNED ${tuned} ENTRIES ${entries} PARAMS ${arg_PARAMS} RESULT_PREFIX record)
  _ciq_pin_stop()
  foreach(arch IN LISTS record_applied)
    foreach(what IN ITEMS flags acf acf_kind)
      set(${out}_${what}_${arch} "${record_${what}_${arch}}" PARENT_SCOPE)
    endforeach()
  endforeach()
  foreach(what IN ITEMS applied defines acf acf_kind)
    set(${out}_${what} "${record_${what}}" PARENT_SCOPE)
  endforeach()
  string(JSON cuda GET "${json}" toolchain cuda)
  string(JSON ptxas ERROR_VARIABLE missing GET "${json}" toolchain ptxas_version)
  if(missing OR NOT ptxas MATCHES "^([0-9]+)[.]([0-9]+)")
    set(ptxas "")
  else()
    # major.minor without leading zeros ("13.03" is 13.3), as text: the rule
    # book bounds each number, and math(EXPR) is never asked.
    set(minor "${CMAKE_MATCH_2}")
    string(REGEX REPLACE "^0+([0-9])" "\\1" major "${CMAKE_MATCH_1}")
    string(REGEX REPLACE "^0+([0-9])" "\\1" minor "${minor}")
    set(ptxas "${major}.${minor}")
  endif()
  set(${out}_entries "${entries}" PARENT_SCOPE)
  set(${out}_architectures "${written}" PARENT_SCOPE)
  set(${out}_ptxas "${ptxas}" PARENT_SCOPE)
  set(${out}_cuda "${cuda}" PARENT_SCOPE)
endfunction()

# _ciq_architecture_set(<out> <arch>...): CUDA architectures in one spelling,
# unique ("sm_90a", "90a-real", "90A" are all "90a") and sorted by number as a
# person reads them (75, 90, 90a, 100); the same rules as arch_name and
# architecture_order in ciq_build/compiler/architectures.py.
function(_ciq_architecture_set out)
  set(names "")
  foreach(arch IN LISTS ARGN)
    string(STRIP "${arch}" name)
    string(TOLOWER "${name}" name)
    # One prefix at most: "sm_sm_90a" is "sm_90a", no architecture (REGEX
    # REPLACE would strip a prefix again at each match).
    if(name MATCHES "^(sm_|compute_|lto_)(.*)$")
      set(name "${CMAKE_MATCH_2}")
    endif()
    string(REGEX REPLACE "-.*$" "" name "${name}")
    if(NOT name STREQUAL "")
      list(APPEND names "${name}")
    endif()
  endforeach()
  list(REMOVE_DUPLICATES names)
  list(SORT names COMPARE NATURAL)
  set(${out} "${names}" PARENT_SCOPE)
endfunction()

# _ciq_shown_architectures(<out> <arch>...): for messages.
function(_ciq_shown_architectures out)
  _ciq_architecture_set(names ${ARGN})
  list(JOIN names ", " shown)
  if(shown STREQUAL "")
    set(shown "nvcc's default architecture")
  endif()
  set(${out} "${shown}" PARENT_SCOPE)
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

# _ciq_acf_argument(<out> <target> <pin_file> <acf_path> <acf_kind> <binary_dir>)
# The nvcc argument that applies the ACF. nvcc passes it to ptxas through a
# shell, so a path with anything but the rule book's nvcc_path characters is
# used through a copy in the build tree (lock.py pin_arguments does the same).
function(_ciq_acf_argument out target pin_file acf_path acf_kind binary_dir)
  _ciq_rules_matches(plain nvcc_path "${acf_path}")
  if(NOT plain)
    set(copy "${binary_dir}/${target}.acf")
    _ciq_rules_matches(plain nvcc_path "${copy}")
    if(NOT plain)
      _ciq_pin_error(${target} "${pin_file}" "neither ${acf_path} nor the build "
        "tree (${binary_dir}) has a path nvcc can pass to ptxas (only letters, "
        "digits and _ . / + : @ % = -). Use a build directory with a plain path.")
      _ciq_pin_stop()
    endif()
    configure_file("${acf_path}" "${copy}" COPYONLY)
    set(acf_path "${copy}")
  endif()
  if(acf_kind STREQUAL "ptxas")
    set(${out} "-Xptxas=--apply-controls=${acf_path}" PARENT_SCOPE)
  else()
    set(${out} "--apply-controls=${acf_path}" PARENT_SCOPE)
  endif()
endfunction()

# _ciq_pin_skip(): inside _ciq_resolve_pin, a pin that does not fit this build
# (the variables `warning`, what to say, and `summary`, the status line): an
# error under CIQ_STRICT, else the warning is said and the pin skipped. A macro,
# so that under CIQ_STRICT it returns from _ciq_resolve_pin; it takes no
# argument, since a macro's arguments are evaluated again where they are used.
macro(_ciq_pin_skip)
  if(CIQ_STRICT)
    # The warning names the target and the record already: refused as it is.
    _ciq_pin_refuse("${warning}" " (CIQ_STRICT=ON makes this an error.)")
    _ciq_pin_stop()
  endif()
  message(WARNING "${warning} The pin is skipped for this build.")
  set(status skipped)
  set(text "${summary}")
endmacro()

# _ciq_pin_misfit(TARGET <target> PIN_FILE <file> RECORD <prefix> CUDA_VERSION <v>
#                 PTXAS_VERSION <v> [ARCHITECTURES <arch>...] WARNING_VAR <out>
#                 SUMMARY_VAR <out>): why the record read into <prefix>_* does not
# fit this build, as a warning and a status line ("" when it fits): another CUDA,
# another ptxas for a ptxas ACF, other architectures (pin/apply.py check_toolchain,
# check_architectures).
function(_ciq_pin_misfit)
  cmake_parse_arguments(PARSE_ARGV 0 arg "" "TARGET;PIN_FILE;RECORD;CUDA_VERSION;PTXAS_VERSION;WARNING_VAR;SUMMARY_VAR"
    "ARCHITECTURES")
  set(target "${arg_TARGET}")
  set(pin_file "${arg_PIN_FILE}")
  set(cuda "${${arg_RECORD}_cuda}")
  set(ptxas "${${arg_RECORD}_ptxas}")
  set(warning "")
  set(summary "")
  _ciq_architecture_set(tuned ${${arg_RECORD}_architectures})
  _ciq_architecture_set(building ${arg_ARCHITECTURES})
  if(NOT cuda STREQUAL arg_CUDA_VERSION)
    set(warning "ciq_tune_target(${target}): the pinned record ${pin_file} was tuned with CUDA ${cuda}, but "
      "this build compiles with CUDA ${arg_CUDA_VERSION} (${CMAKE_CUDA_COMPILER}). Build with CUDA ${cuda} "
      "(-DCMAKE_CUDA_COMPILER=...), or retune with `python -m ciq_build tune ${target}`.")
    set(summary "pin skipped (tuned with CUDA ${cuda}, compiling with ${arg_CUDA_VERSION}): ${pin_file}")
  elseif(${arg_RECORD}_acf_kind STREQUAL "ptxas" AND NOT ptxas STREQUAL ""
      AND NOT arg_PTXAS_VERSION STREQUAL "" AND NOT ptxas STREQUAL arg_PTXAS_VERSION)
    set(warning "ciq_tune_target(${target}): the pinned record ${pin_file} carries a ptxas ACF measured "
      "with ptxas ${ptxas}, but this toolkit's ptxas is ${arg_PTXAS_VERSION}, which cannot read it. Build "
      "with a ptxas ${ptxas} toolkit, or retune with `python -m ciq_build tune ${target}`.")
    set(summary "pin skipped (measured with ptxas ${ptxas}, compiling with ${arg_PTXAS_VERSION}): ${pin_file}")
  elseif(NOT tuned STREQUAL "" AND NOT tuned STREQUAL building)
    _ciq_shown_architectures(tuned_shown ${tuned})
    _ciq_shown_architectures(building_shown ${building})
    list(JOIN tuned ", " tuned_list)
    set(warning "ciq_tune_target(${target}): the pinned record ${pin_file} was tuned for ${tuned_shown}, "
      "but this build compiles for ${building_shown}. Retune for these architectures (`python -m "
      "ciq_build tune ${target}`), or build for ${tuned_list}.")
    set(summary "pin skipped (tuned for ${tuned_shown}, compiling for ${building_shown}): ${pin_file}")
  endif()
  string(JOIN "" warning ${warning})
  set(${arg_WARNING_VAR} "${warning}" PARENT_SCOPE)
  set(${arg_SUMMARY_VAR} "${summary}" PARENT_SCOPE)
endfunction()

# _ciq_check_nvcc_acf(TARGET <target> PIN_FILE <file> KINDS <kind>... [ARCHITECTURES <arch>...]):
# refuse an nvcc ACF (one of the applied architectures' ACF KINDS) on a build for an
# architecture below sm_100, its default, "all" or "native", which nvcc would refuse
# mid-build (pin/apply.py check_nvcc_acf).
function(_ciq_check_nvcc_acf)
  cmake_parse_arguments(PARSE_ARGV 0 arg "" "TARGET;PIN_FILE" "KINDS;ARCHITECTURES")
  if(NOT "nvcc" IN_LIST arg_KINDS)
    return()
  endif()
  set(too_old "")
  foreach(building_arch IN LISTS arg_ARCHITECTURES)
    _ciq_architecture_set(name "${building_arch}")
    _ciq_rules_matches(ok nvcc_acf_arch "${name}")
    if(NOT ok)
      list(APPEND too_old "${building_arch}")
    endif()
  endforeach()
  if("${arg_ARCHITECTURES}" STREQUAL "")
    set(too_old "nvcc's default architecture")
  endif()
  if(NOT too_old STREQUAL "")
    list(JOIN too_old ", " too_old)
    _ciq_pin_error(${arg_TARGET} "${arg_PIN_FILE}" "it carries an nvcc ACF, which nvcc applies only for "
      "sm_100 and newer, but this build compiles for ${too_old}. Build for sm_100 and newer only, or "
      "retune and use the ptxas search space (a ptxas ACF works for every architecture).")
  endif()
endfunction()

# _ciq_pin_arguments(TARGET <target> PIN_FILE <file> BINARY_DIR <dir> RECORD <prefix>
#                    RESULT_PREFIX <prefix>): what a build applies of the record read
# into <prefix>_*: each architecture's device arguments (its flags, then its ACF;
# an entry's ACF copy is named for its architecture: pin/apply.py resolve_build_pin),
# as one options file when they are the same for all, else per -gencode. Sets
# <prefix>_args, <prefix>_depends (the ACF copies), <prefix>_gencode (and
# <prefix>_gencode_<arch>, "" for one set) and <prefix>_message.
function(_ciq_pin_arguments)
  cmake_parse_arguments(PARSE_ARGV 0 arg "" "TARGET;PIN_FILE;BINARY_DIR;RECORD;RESULT_PREFIX" "")
  set(in "${arg_RECORD}")
  set(out "${arg_RESULT_PREFIX}")
  set(distinct "")
  set(depends "")
  foreach(arch IN LISTS ${in}_applied)
    set(device_${arch} "${${in}_flags_${arch}}")
    if(NOT ${in}_acf_${arch} STREQUAL "")
      set(copy_name "${arg_TARGET}")
      if(arch IN_LIST ${in}_entries)
        set(copy_name "${arg_TARGET}.${arch}")
      endif()
      _ciq_acf_argument(acf_arg ${copy_name} "${arg_PIN_FILE}" "${${in}_acf_${arch}}"
        "${${in}_acf_kind_${arch}}" "${arg_BINARY_DIR}")
      _ciq_pin_stop()
      list(APPEND device_${arch} "${acf_arg}")
      if(NOT acf_arg MATCHES "=${${in}_acf_${arch}}$")
        list(APPEND depends "${arg_BINARY_DIR}/${copy_name}.acf")
      endif()
    endif()
    string(REPLACE ";" "\n" key "${device_${arch}}")
    list(APPEND distinct "[${key}]")
  endforeach()
  list(REMOVE_DUPLICATES distinct)
  list(LENGTH distinct distinct_count)
  list(GET ${in}_applied 0 first)
  set(gencode "")
  if(distinct_count EQUAL 1)
    # One set of controls for every architecture: plain nvcc, as before.
    set(args ${${in}_flags_${first}} ${${in}_defines})
    if(NOT ${in}_acf_${first} STREQUAL "")
      list(GET device_${first} -1 acf_arg)
      list(APPEND args "${acf_arg}")
    endif()
    list(JOIN args " " shown)
    if(shown STREQUAL "")
      set(shown "compiler defaults")
    endif()
    set(text "pinned controls from ${arg_PIN_FILE}: ${shown}")
    if("${${in}_architectures}" STREQUAL "")
      _ciq_rules_message(anywhere any_architecture)
      string(APPEND text " (${anywhere})")
    endif()
  else()
    # Per -gencode: the shared -D parameters in the options file, each
    # architecture's own arguments through the gencode launcher.
    set(args "${${in}_defines}")
    set(gencode "${${in}_applied}")
    set(shown "")
    foreach(arch IN LISTS gencode)
      list(JOIN device_${arch} " " one)
      if(one STREQUAL "")
        set(one "compiler defaults")
      endif()
      list(APPEND shown "sm_${arch}: ${one}")
      set(${out}_gencode_${arch} "${device_${arch}}" PARENT_SCOPE)
    endforeach()
    list(JOIN shown "; " shown)
    list(JOIN args " " all)
    if(NOT all STREQUAL "")
      string(APPEND shown "; all: ${all}")
    endif()
    set(text "pinned controls per architecture from ${arg_PIN_FILE}: ${shown}")
  endif()
  set(${out}_args "${args}" PARENT_SCOPE)
  set(${out}_depends "${depends}" PARENT_SCOPE)
  set(${out}_gencode "${gencode}" PARENT_SCOPE)
  set(${out}_message "${text}" PARENT_SCOPE)
endfunction()

# _ciq_linked_folder(<out> <pin dir> <top>): the pin dir if it is a symbolic link,
# else the first folder above it and below <top> that is one, else "" (pin/record.py
# check_pin_dir: a pin dir outside <top> is checked itself only).
function(_ciq_linked_folder out pin_dir top)
  set(${out} "" PARENT_SCOPE)
  set(folder "${pin_dir}")
  while(TRUE)
    if(IS_SYMLINK "${folder}")
      set(${out} "${folder}" PARENT_SCOPE)
      return()
    endif()
    get_filename_component(folder "${folder}" DIRECTORY)
    string(FIND "${folder}/" "${top}/" at)
    if(top STREQUAL "" OR folder STREQUAL top OR NOT at EQUAL 0)
      return()
    endif()
  endwhile()
endfunction()

# _ciq_resolve_pin(TARGET <target> PIN_FILE <file> PIN_DIR <dir> BINARY_DIR <dir>
#                  ALLOW_NUMERICS <bool> CUDA_VERSION <major.minor>
#                  PTXAS_VERSION <major.minor> [ARCHITECTURES <arch>...]
#                  [PARAMS <NAME=space>...] [TOP_DIR <dir>] RESULT_PREFIX <prefix>)
# What a build applies to <target>, as resolve_build_pin (ciq_build/pin/apply.py)
# decides it. PTXAS_VERSION is the building ptxas's ("" when unknown): a ptxas
# ACF is applied only by the ptxas it was measured with. ARCHITECTURES are the
# ones the build compiles for: a pin is applied only to the architectures it
# was tuned for. BINARY_DIR holds the copies of ACFs whose path nvcc cannot
# pass. TOP_DIR (CMAKE_SOURCE_DIR by default): no folder from it down to the pin
# dir may be a symbolic link. Sets, in the caller:
#   <prefix>_status   applied | none | disabled | skipped
#   <prefix>_args     the options file's arguments
#   <prefix>_depends  the files whose change must rebuild the objects
#   <prefix>_acf_kind "", "ptxas" or "nvcc"
#   <prefix>_message  the status line
#   <prefix>_gencode  for a pin whose architectures have different controls,
#                     those architectures, and <prefix>_gencode_<arch> each
#                     one's device arguments; else ""
function(_ciq_resolve_pin)
  cmake_parse_arguments(PARSE_ARGV 0 arg ""
    "TARGET;PIN_FILE;PIN_DIR;BINARY_DIR;ALLOW_NUMERICS;CUDA_VERSION;PTXAS_VERSION;RESULT_PREFIX;TOP_DIR"
    "ARCHITECTURES;PARAMS")
  set(target "${arg_TARGET}")
  set(pin_file "${arg_PIN_FILE}")
  set(pin_dir "${arg_PIN_DIR}")
  set(out "${arg_RESULT_PREFIX}")
  foreach(what IN ITEMS args depends acf_kind gencode)
    set(pin_${what} "")
  endforeach()
  set(top "${arg_TOP_DIR}")
  if(NOT DEFINED arg_TOP_DIR)
    set(top "${CMAKE_SOURCE_DIR}")
  endif()
  _ciq_linked_folder(linked "${pin_dir}" "${top}")
  if(CIQ_DISABLE)
    set(status disabled)
    set(text "pins disabled (CIQ_DISABLE=ON)")
  elseif(NOT linked STREQUAL "")
    # A committed `ciq -> elsewhere`, or `pins -> elsewhere` with PIN_DIR pins/ciq
    # (pin/record.py check_pin_dir): the pins would be read from wherever it points.
    file(READ_SYMLINK "${linked}" destination)
    set(where "is a symbolic link")
    if(NOT linked STREQUAL pin_dir)
      set(where "lies in ${linked}, a symbolic link")
    endif()
    _ciq_pin_error(${target} "${pin_file}" "the pin directory ${pin_dir} ${where} (to ${destination}); pins "
      "must live in a real directory of the source tree. Replace the link with a directory holding the pins.")
    return()
  elseif(NOT EXISTS "${pin_file}" AND NOT IS_SYMLINK "${pin_file}")
    set(status none)
    set(text "no pinned controls (${pin_file})")
  else()
    _ciq_read_pin(TARGET ${target} PIN_FILE "${pin_file}" PIN_DIR "${pin_dir}"
      ALLOW_NUMERICS "${arg_ALLOW_NUMERICS}" PARAMS ${arg_PARAMS} RESULT_PREFIX record)
    _ciq_pin_stop()
    _ciq_pin_misfit(TARGET ${target} PIN_FILE "${pin_file}" RECORD record CUDA_VERSION "${arg_CUDA_VERSION}"
      PTXAS_VERSION "${arg_PTXAS_VERSION}" ARCHITECTURES ${arg_ARCHITECTURES}
      WARNING_VAR warning SUMMARY_VAR summary)
    if(NOT warning STREQUAL "")
      _ciq_pin_skip()
      set(pin_depends "${pin_file}" ${record_acf})
    else()
      set(kinds "")
      foreach(arch IN LISTS record_applied)
        list(APPEND kinds "${record_acf_kind_${arch}}")
      endforeach()
      _ciq_check_nvcc_acf(TARGET ${target} PIN_FILE "${pin_file}" KINDS ${kinds} ARCHITECTURES ${arg_ARCHITECTURES})
      _ciq_pin_stop()
      _ciq_pin_arguments(TARGET ${target} PIN_FILE "${pin_file}" BINARY_DIR "${arg_BINARY_DIR}" RECORD record
        RESULT_PREFIX pin)
      _ciq_pin_stop()
      set(status applied)
      set(text "${pin_message}")
      set(pin_acf_kind "${record_acf_kind}")
      set(pin_depends "${pin_file}" ${record_acf} ${pin_depends})
      list(REMOVE_DUPLICATES pin_depends)
      foreach(arch IN LISTS pin_gencode)
        set(${out}_gencode_${arch} "${pin_gencode_${arch}}" PARENT_SCOPE)
      endforeach()
    endif()
  endif()
  set(${out}_status "${status}" PARENT_SCOPE)
  set(${out}_message "${text}" PARENT_SCOPE)
  foreach(what IN ITEMS args depends acf_kind gencode)
    set(${out}_${what} "${pin_${what}}" PARENT_SCOPE)
  endforeach()
endfunction()

# ---------------------------------------------------------------------------
# The steps of ciq_tune_target(), in the order it runs them
# ---------------------------------------------------------------------------

# _ciq_check_arguments(<fn>): refuse PARAMS, CONSTRAINTS, OBJECTIVES,
# SEARCH_SPACE and METRIC that tune would refuse, by the rule book's
# ciq_tune_target() rules, with "did you mean" for a misspelt word. Inside
# ciq_tune_target(), message(FATAL_ERROR) shows the call stack down to the
# caller's line. Reads the caller's ARG_*.
function(_ciq_check_arguments fn)
  set(names "")
  foreach(spec IN LISTS ARG_PARAMS)
    _ciq_rules_param_problem(problem "${spec}")
    if(NOT problem STREQUAL "")
      message(FATAL_ERROR "${fn}: PARAMS '${spec}': ${problem}. Write NAME=choice(a,b,c), "
        "NAME=a,b,c, NAME=range(start,end[,step]), NAME=literal(v) or "
        "NAME=log_sampling(start,end[,total]).")
    endif()
    string(REGEX MATCH "^[ \t\n]*([A-Za-z_][A-Za-z0-9_]*)" name "${spec}")
    string(STRIP "${name}" name)
    if(name IN_LIST names)
      message(FATAL_ERROR "${fn}: PARAMS '${spec}': ${name} is given more than once; keep one.")
    endif()
    list(APPEND names "${name}")
  endforeach()
  foreach(expression IN LISTS ARG_CONSTRAINTS)
    _ciq_rules_constraint_problem(problem "${expression}" ${names})
    if(NOT problem STREQUAL "")
      message(FATAL_ERROR "${fn}: CONSTRAINTS '${expression}': ${problem}. A constraint "
        "uses whole numbers, the PARAMS names, ( ), + - * / %, < <= > >= == != and and, or, not.")
    endif()
  endforeach()
  _ciq_rules_words(objectives objective)
  list(JOIN objectives ", " shown)
  string(REPLACE "metric" "metric:<name>" shown "${shown}")
  foreach(objective IN LISTS ARG_OBJECTIVES)
    _ciq_rules_matches(ok objective_spec "${objective}")
    if(NOT ok)
      string(REGEX REPLACE "^(max|min):" "" base "${objective}")
      string(REGEX REPLACE ":.*$" "" base "${base}")
      _ciq_rules_nearest(guess "${base}" ${objectives})
      set(hint "")
      if(NOT guess STREQUAL "" AND NOT guess STREQUAL base)
        set(hint " (did you mean ${guess}?)")
      endif()
      _ciq_rules_message(said unknown_objective value "${objective}" hint "${hint}" words "${shown}")
      message(FATAL_ERROR "${fn}: OBJECTIVES ${said}.")
    endif()
    _ciq_rules_matches(benchmarked benchmark_objective "${objective}")
    if(benchmarked AND NOT ARG_BENCHMARK)
      message(FATAL_ERROR "${fn}: OBJECTIVES ${objective} is read from a benchmark run; add "
        "BENCHMARK <exe-target>, or use a static objective such as spill_bytes.")
    endif()
  endforeach()
  _ciq_rules_words(kinds search_space)
  foreach(kind IN LISTS ARG_SEARCH_SPACE)
    _ciq_rules_matches(ok search_space "${kind}")
    if(NOT ok)
      string(REGEX REPLACE ":.*$" "" base "${kind}")
      _ciq_rules_nearest(guess "${base}" ${kinds})
      set(hint "")
      if(NOT guess STREQUAL "" AND NOT guess STREQUAL base)
        set(hint " (did you mean ${guess}?)")
      endif()
      message(FATAL_ERROR "${fn}: SEARCH_SPACE '${kind}' is not a search space${hint}; use "
        "knobs, params, ptxas-acf[:VERSION[:VARIANT]], nvcc-acf[:VERSION[:VARIANT]], the "
        "path of a .bin search space, or acf-pool:<folder>.")
    endif()
  endforeach()
  set(sizes "")
  foreach(entry IN LISTS ARG_ARGS_SETS)
    string(FIND "${entry}" ":" colon)
    set(size "${entry}")
    if(colon GREATER -1)
      string(SUBSTRING "${entry}" 0 ${colon} size)
    endif()
    _ciq_rules_matches(ok args_set_name "${size}")
    if(colon EQUAL -1 OR NOT ok)
      message(FATAL_ERROR "${fn}: ARGS_SETS '${entry}' is not <name>:<arguments> with a name of "
        "letters, digits, _ . + - (at most 32); write e.g. ARGS_SETS \"small:-n 1024\" \"large:-n 65536\".")
    endif()
    if(size IN_LIST sizes)
      message(FATAL_ERROR "${fn}: ARGS_SETS '${entry}': the size ${size} is given more than once; "
        "name each size once.")
    endif()
    list(APPEND sizes "${size}")
  endforeach()
  # THREADS_PER_BLOCK <threads | PARAMS name | expression over them> [<the defaults' threads>]
  # (ciq_build/project/threads_per_block.py): the expression in the CONSTRAINTS language.
  list(LENGTH ARG_THREADS_PER_BLOCK count)
  if(count GREATER 0)
    set(form "THREADS_PER_BLOCK 256, THREADS_PER_BLOCK <a PARAMS name> [<the defaults' threads>] or "
      "THREADS_PER_BLOCK \"<expression over PARAMS names>\" [<the defaults' threads>]")
    list(GET ARG_THREADS_PER_BLOCK 0 expression)
    _ciq_rules_constraint_problem(problem "${expression}" ${names})
    if(count GREATER 2)
      message(FATAL_ERROR "${fn}: THREADS_PER_BLOCK takes one or two values, not "
        "'${ARG_THREADS_PER_BLOCK}': ${form}.")
    elseif(NOT problem STREQUAL "")
      message(FATAL_ERROR "${fn}: THREADS_PER_BLOCK '${expression}': ${problem}. ${form}.")
    elseif(count EQUAL 2)
      list(GET ARG_THREADS_PER_BLOCK 1 threads)
      if(NOT threads MATCHES "^[1-9][0-9]*$" OR threads GREATER 1024)
        message(FATAL_ERROR "${fn}: THREADS_PER_BLOCK ${expression} ${threads}: the defaults' threads a block "
          "is a number from 1 to 1024.")
      endif()
    endif()
  endif()
  if(DEFINED ARG_SCORE)
    _ciq_rules_words(scores score)
    if(NOT ARG_SCORE IN_LIST scores)
      _ciq_rules_nearest(guess "${ARG_SCORE}" ${scores})
      set(hint "")
      if(NOT guess STREQUAL "")
        set(hint " (did you mean ${guess}?)")
      endif()
      list(JOIN scores " or " shown)
      message(FATAL_ERROR "${fn}: SCORE '${ARG_SCORE}' is not a score${hint}; use ${shown}.")
    endif()
  endif()
  if(DEFINED ARG_METRIC)
    # The number is METRIC's first capture group: a regex without one cannot give it.
    string(REGEX REPLACE "\\\\." "" plain "${ARG_METRIC}")
    string(REGEX REPLACE "\\[[^]]*\\]" "" plain "${plain}")
    if(NOT plain MATCHES "[(]([^?]|$)")
      message(FATAL_ERROR "${fn}: METRIC '${ARG_METRIC}' has no capture group; put ( ) "
        "around the number, e.g. METRIC \"time: ([0-9.]+) ms\".")
    endif()
  endif()
endfunction()

# _ciq_check_call(<target>): refuse a ciq_tune_target() call that cannot
# work, with what to do. The check of ciq_tune_target()'s own parse: it reads
# the caller's ARG_* and sets nothing.
function(_ciq_check_call target)
  set(fn "ciq_tune_target(${target})")
  if(ARG_UNPARSED_ARGUMENTS)
    set(keywords BENCHMARK ARGS ARGS_SETS SCORE METRIC UNIT OBJECTIVES PARAMS CONSTRAINTS SEARCH_SPACE SEEDS
      PIN_DIR TIMEOUT THREADS_PER_BLOCK DESCRIPTION ALLOW_NUMERICS)
    set(hint "")
    foreach(word IN LISTS ARG_UNPARSED_ARGUMENTS)  # a misspelt keyword (OBJECTIVE, SEARCHSPACE): say which
      _ciq_rules_nearest(guess "${word}" ${keywords})
      if(NOT guess STREQUAL "")
        set(hint " (did you mean ${guess} for ${word}?)")
        break()
      endif()
    endforeach()
    message(FATAL_ERROR "${fn}: unknown arguments '${ARG_UNPARSED_ARGUMENTS}'${hint}. "
      "Keywords are BENCHMARK, ARGS, ARGS_SETS, SCORE, METRIC, UNIT, OBJECTIVES, PARAMS, CONSTRAINTS, "
      "SEARCH_SPACE, SEEDS, PIN_DIR, TIMEOUT, THREADS_PER_BLOCK, DESCRIPTION and ALLOW_NUMERICS.")
  endif()
  foreach(keyword IN ITEMS BENCHMARK METRIC UNIT PIN_DIR TIMEOUT SCORE DESCRIPTION THREADS_PER_BLOCK)
    if(keyword IN_LIST ARG_KEYWORDS_MISSING_VALUES)
      message(FATAL_ERROR "${fn}: ${keyword} needs a value.")
    endif()
  endforeach()
  if(NOT TARGET "${target}")
    message(FATAL_ERROR "${fn}: there is no target '${target}'. Call "
      "ciq_tune_target() after add_library()/add_executable() of that target.")
  endif()
  get_target_property(aliased "${target}" ALIASED_TARGET)
  if(aliased)
    message(FATAL_ERROR "${fn}: '${target}' is an alias; pass the real target "
      "'${aliased}'.")
  endif()
  get_target_property(imported "${target}" IMPORTED)
  get_target_property(type "${target}" TYPE)
  if(imported OR NOT type MATCHES "^(STATIC_LIBRARY|SHARED_LIBRARY|MODULE_LIBRARY|OBJECT_LIBRARY|EXECUTABLE)$")
    if(imported)
      set(type "an imported ${type}")
    endif()
    set(hint "")
    if(type STREQUAL "INTERFACE_LIBRARY")
      set(hint " A header-only library's kernels are compiled by the targets that link it: tune one of those.")
    endif()
    message(FATAL_ERROR "${fn}: '${target}' is ${type}; only a library or "
      "executable built here from CUDA sources can be tuned.${hint}")
  endif()
  if(ARG_ARGS AND NOT ARG_BENCHMARK)
    message(FATAL_ERROR "${fn}: ARGS are the benchmark's arguments; give "
      "BENCHMARK <exe-target> too.")
  endif()
  if(ARG_ARGS_SETS AND NOT ARG_BENCHMARK)
    message(FATAL_ERROR "${fn}: ARGS_SETS are the benchmark's problem sizes; give "
      "BENCHMARK <exe-target> too.")
  endif()
  if(ARG_ARGS AND ARG_ARGS_SETS)
    message(FATAL_ERROR "${fn}: give ARGS (one size) or ARGS_SETS (several), not both; "
      "put the common arguments into each ARGS_SETS entry.")
  endif()
  if(DEFINED ARG_SCORE AND NOT ARG_ARGS_SETS)
    message(FATAL_ERROR "${fn}: SCORE combines the sizes of ARGS_SETS; give "
      "ARGS_SETS \"small:-n 1024\" \"large:-n 65536\" too, or leave SCORE out.")
  endif()
  if(ARG_METRIC AND NOT ARG_BENCHMARK)
    message(FATAL_ERROR "${fn}: METRIC reads the output of a benchmark; give "
      "BENCHMARK <exe-target> too.")
  endif()
  _ciq_check_arguments("${fn}")
  if(DEFINED ARG_TIMEOUT AND (NOT ARG_TIMEOUT MATCHES "^[0-9]+(\\.[0-9]+)?$" OR ARG_TIMEOUT EQUAL 0))
    message(FATAL_ERROR "${fn}: TIMEOUT '${ARG_TIMEOUT}' must be a positive "
      "number of seconds.")
  endif()
  # UNIT: what the number METRIC's first group captures is in (ms by default): a time or a rate, the
  # rule book's metric_unit; the driver converts it to milliseconds (ciq_build/core/metric_unit.py).
  if(DEFINED ARG_UNIT)
    _ciq_rules_matches(unit_ok metric_unit "${ARG_UNIT}")
  endif()
  if(NOT DEFINED ARG_UNIT)
    # ms, filled in by ciq_tune_target()
  elseif(NOT unit_ok)
    _ciq_rules_message(said unknown_metric_unit value "${ARG_UNIT}")
    message(FATAL_ERROR "${fn}: ${said}.")
  elseif(NOT DEFINED ARG_METRIC)
    message(FATAL_ERROR "${fn}: UNIT is the unit of METRIC's number; give "
      "METRIC <regex> too (CIQ_METRIC time_ms=... lines are always milliseconds).")
  endif()
  if(NOT CMAKE_CUDA_COMPILER_VERSION)
    message(FATAL_ERROR "${fn}: CUDA is not enabled here. Add CUDA to project() "
      "or call enable_language(CUDA) before ciq_tune_target().")
  endif()
  if(NOT CMAKE_GENERATOR MATCHES "^(Ninja|Unix Makefiles)$")
    message(WARNING "${fn}: the ${CMAKE_GENERATOR} generator is not supported "
      "by `python -m ciq_build tune`; pins are applied, but tune from a Ninja "
      "or Unix Makefiles build tree.")
  endif()

  get_property(registered GLOBAL PROPERTY CIQ_BUILD_TARGETS)
  if(target IN_LIST registered)
    message(FATAL_ERROR "${fn}: called twice for the same target; merge the "
      "calls.")
  endif()

  # The rule book's names, as Python reads them (a target names <target>.json).
  _ciq_rules_matches(plain target_name "${target}")
  if(NOT plain)
    message(FATAL_ERROR "${fn}: the target name '${target}' cannot name a pinned "
      "record; tune a target whose name uses letters, digits and _ . + - and does "
      "not start with '.' or '-'.")
  endif()
  if(DEFINED ARG_PIN_DIR)
    _ciq_rules_matches(plain pin_dir "${ARG_PIN_DIR}")
    if(NOT plain OR ARG_PIN_DIR MATCHES "(^|/)[.][.](/|$)")
      message(FATAL_ERROR "${fn}: PIN_DIR '${ARG_PIN_DIR}' is not a plain path "
        "(letters, digits, spaces and _ . / + : @ % = -, no '..'); choose another.")
    endif()
  endif()
endfunction()

# _ciq_pin_location(TARGET <target> PIN_DIR <dir> PIN_DIR_VAR <out> PIN_FILE_VAR <out>):
# the pin dir (<dir> taken from CMAKE_CURRENT_SOURCE_DIR, normalised) and the
# pinned record <pin dir>/<target>.json in it.
function(_ciq_pin_location)
  cmake_parse_arguments(PARSE_ARGV 0 arg "" "TARGET;PIN_DIR;PIN_DIR_VAR;PIN_FILE_VAR" "")
  cmake_path(ABSOLUTE_PATH arg_PIN_DIR BASE_DIRECTORY "${CMAKE_CURRENT_SOURCE_DIR}"
    NORMALIZE OUTPUT_VARIABLE pin_dir)
  string(REGEX REPLACE "/$" "" pin_dir "${pin_dir}")
  set(${arg_PIN_DIR_VAR} "${pin_dir}" PARENT_SCOPE)
  set(${arg_PIN_FILE_VAR} "${pin_dir}/${arg_TARGET}.json" PARENT_SCOPE)
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
    list(JOIN ${arg_DEVICE_ARGUMENTS_PREFIX}_${arch} "\n" lines)
    if(NOT lines STREQUAL "")
      string(APPEND lines "\n")
    endif()
    _ciq_write_if_changed("${file}" "${lines}")
    list(APPEND launcher "--arch=${arch}=${file}")
    list(APPEND files "${file}" "${script}")
  endforeach()
  list(APPEND launcher "--")
  set_target_properties(${target} PROPERTIES CUDA_COMPILER_LAUNCHER "${launcher}")
  list(REMOVE_DUPLICATES files)
  set(${arg_FILES_VAR} "${files}" PARENT_SCOPE)
endfunction()

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
    get_target_property(architectures ${target} CUDA_ARCHITECTURES)
    if(NOT architectures)
      set(architectures "")
    endif()
    set_target_properties(${target} PROPERTIES _CIQ_PIN_ARCHITECTURES "${architectures}"
      _CIQ_ARCHITECTURES_READ TRUE)
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
    # Every argument is rule-book plain (no whitespace, quotes or backslashes),
    # so each is one options-file line as it is.
    list(JOIN args "\n" lines)
    if(NOT lines STREQUAL "")
      string(APPEND lines "\n")
    endif()
    _ciq_write_if_changed("${options_file}" "${lines}")
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

# _ciq_register(TARGET <target> OPTIONS_FILE <file>): make the target's CUDA
# compiles read the options file, and defer its finalisation to the end of the
# top-level directory (ciq_tune_target() has set the properties it reads).
function(_ciq_register)
  cmake_parse_arguments(PARSE_ARGV 0 arg "" "TARGET;OPTIONS_FILE" "")
  target_compile_options(${arg_TARGET} PRIVATE
    "$<$<COMPILE_LANGUAGE:CUDA>:--options-file=${arg_OPTIONS_FILE}>")
  # Sources, CUDA_ARCHITECTURES and the benchmark target may still be added
  # or changed after this call: finish at the end of the top-level directory.
  set_property(GLOBAL APPEND PROPERTY CIQ_BUILD_TARGETS "${arg_TARGET}")
  # DEFER evaluates variable references when the call runs, not now: pass the
  # target's name literally.
  cmake_language(EVAL CODE
    "cmake_language(DEFER DIRECTORY \"\${CMAKE_SOURCE_DIR}\" CALL _ciq_finalize_target [==[${arg_TARGET}]==])")
  get_property(checked GLOBAL PROPERTY _CIQ_BUILD_CHECK_DEFERRED)
  if(NOT checked)
    set_property(GLOBAL PROPERTY _CIQ_BUILD_CHECK_DEFERRED TRUE)
    cmake_language(DEFER DIRECTORY "${CMAKE_SOURCE_DIR}" CALL _ciq_check_tune_target)
    cmake_language(DEFER DIRECTORY "${CMAKE_SOURCE_DIR}" CALL _ciq_check_findcuda_toolkit)
  endif()
endfunction()

# ---------------------------------------------------------------------------
# Public function
# ---------------------------------------------------------------------------

# ciq_tune_target(): see the contract at the top of this file.
function(ciq_tune_target target)
  cmake_parse_arguments(PARSE_ARGV 1 ARG
    # Options
    "ALLOW_NUMERICS"       # the search may change floating-point results
    # One-value keywords
    "BENCHMARK;METRIC;UNIT;PIN_DIR;TIMEOUT;SCORE;DESCRIPTION"
    # Multi-value keywords
    "ARGS;ARGS_SETS;OBJECTIVES;PARAMS;CONSTRAINTS;SEARCH_SPACE;SEEDS;THREADS_PER_BLOCK")
  _ciq_check_call(${target})
  # The defaults (TIMEOUT's is tune's, ciq_build/core/settings.py DEFAULT_TIMEOUT; a test keeps them equal).
  if(NOT DEFINED ARG_TIMEOUT)
    set(ARG_TIMEOUT 60)
  endif()
  if(NOT DEFINED ARG_UNIT)
    set(ARG_UNIT ms)
  endif()
  set(pin_dir ciq)  # PIN_DIR's default, taken from CMAKE_CURRENT_SOURCE_DIR
  if(DEFINED ARG_PIN_DIR)
    set(pin_dir "${ARG_PIN_DIR}")
  endif()
  _ciq_pin_location(TARGET ${target} PIN_DIR "${pin_dir}" PIN_DIR_VAR pin_dir PIN_FILE_VAR pin_file)
  # A seed's path is the call's, as PIN_DIR's; a controls list ("-Xptxas=-O2 -DTILE=32") stays as written.
  set(seeds "")
  foreach(seed IN LISTS ARG_SEEDS)
    if(NOT seed MATCHES "^[ \t]*-" AND NOT IS_ABSOLUTE "${seed}")
      set(seed "${CMAKE_CURRENT_SOURCE_DIR}/${seed}")
    endif()
    list(APPEND seeds "${seed}")
  endforeach()
  _ciq_apply_pin(TARGET ${target} PIN_FILE "${pin_file}" PIN_DIR "${pin_dir}"
    OPTIONS_FILE "${CMAKE_CURRENT_BINARY_DIR}/ciq/${target}.nvcc-options"
    ALLOW_NUMERICS "${ARG_ALLOW_NUMERICS}" PARAMS ${ARG_PARAMS}
    OPTIONS_FILE_VAR options_file STATUS_VAR status ARGS_VAR args DEPENDS_VAR depends)
  _ciq_watch_pin_dir("${pin_dir}")
  set_target_properties(${target} PROPERTIES
    CIQ_PIN_STATUS "${status}"
    CIQ_PIN_FILE "${pin_file}"
    CIQ_NVCC_ARGUMENTS "${args}"
    CIQ_OPTIONS_FILE "${options_file}"
    # Read by the deferred finalisation (_ciq_finalize_target).
    _CIQ_OBJECT_DEPENDS "${options_file};${depends}"
    _CIQ_BENCHMARK "${ARG_BENCHMARK}"
    _CIQ_CALL_FILE "${CMAKE_CURRENT_LIST_FILE}"
    _CIQ_ARGS "${ARG_ARGS}"
    _CIQ_ARGS_SETS "${ARG_ARGS_SETS}"
    _CIQ_SCORE "${ARG_SCORE}"
    _CIQ_METRIC "${ARG_METRIC}"
    _CIQ_METRIC_UNIT "${ARG_UNIT}"
    _CIQ_OBJECTIVES "${ARG_OBJECTIVES}"
    _CIQ_PARAMS "${ARG_PARAMS}"
    _CIQ_CONSTRAINTS "${ARG_CONSTRAINTS}"
    _CIQ_SEEDS "${seeds}"
    _CIQ_SEARCH_SPACE "${ARG_SEARCH_SPACE}"
    _CIQ_PIN_DIR "${pin_dir}"
    _CIQ_TIMEOUT "${ARG_TIMEOUT}"
    _CIQ_THREADS_PER_BLOCK "${ARG_THREADS_PER_BLOCK}"
    _CIQ_DESCRIPTION "${ARG_DESCRIPTION}"
    _CIQ_ALLOW_NUMERICS "${ARG_ALLOW_NUMERICS}"
    _CIQ_CUDA_COMPILER "${CMAKE_CUDA_COMPILER}"
    _CIQ_CUDA_COMPILER_VERSION "${CMAKE_CUDA_COMPILER_VERSION}")
  _ciq_register(TARGET ${target} OPTIONS_FILE "${options_file}")
endfunction()

# ---------------------------------------------------------------------------
# Deferred steps (end of the top-level CMakeLists.txt)
# ---------------------------------------------------------------------------

# _ciq_findcuda_compiled(<out> <target>): the names of the .cu files that the legacy FindCUDA module's
# cuda_add_executable() / cuda_add_library() compile for <target> by custom commands (each one linked as
# the object <target>_generated_<name>.o), outside CMake's CUDA language, where no pinned flag reaches.
function(_ciq_findcuda_compiled out target)
  get_target_property(sources ${target} SOURCES)
  set(prefix "${target}_generated_")
  string(LENGTH "${prefix}" prefix_length)
  set(result "")
  foreach(source IN LISTS sources)
    get_filename_component(name "${source}" NAME)
    string(SUBSTRING "${name}" 0 ${prefix_length} start)
    if(start STREQUAL prefix AND name MATCHES "\\.cu\\.(o|obj)$")
      string(SUBSTRING "${name}" ${prefix_length} -1 compiled)
      string(REGEX REPLACE "\\.(o|obj)$" "" compiled "${compiled}")
      list(APPEND result "${compiled}")
    endif()
  endforeach()
  set(${out} "${result}" PARENT_SCOPE)
endfunction()

# _ciq_cuda_sources(<out> <target>): absolute paths of the target's CUDA sources: those CMake compiles as
# CUDA (not a HEADER_FILE_ONLY one, nor one FindCUDA compiles by its own command).
function(_ciq_cuda_sources out target)
  get_target_property(sources ${target} SOURCES)
  get_target_property(source_dir ${target} SOURCE_DIR)
  get_target_property(binary_dir ${target} BINARY_DIR)
  _ciq_findcuda_compiled(findcuda ${target})
  set(result "")
  foreach(source IN LISTS sources)
    if(source MATCHES "\\$<")
      continue()  # $<TARGET_OBJECTS:...> and other generator expressions
    endif()
    get_property(header_only SOURCE "${source}" TARGET_DIRECTORY ${target} PROPERTY HEADER_FILE_ONLY)
    get_filename_component(name "${source}" NAME)
    if(header_only OR name IN_LIST findcuda)
      continue()
    endif()
    get_property(language SOURCE "${source}" TARGET_DIRECTORY ${target} PROPERTY LANGUAGE)
    if(language STREQUAL "")
      get_filename_component(extension "${source}" LAST_EXT)
      string(TOLOWER "${extension}" extension)
      if(extension STREQUAL ".cu")
        set(language CUDA)
      endif()
    endif()
    if(NOT language STREQUAL "CUDA")
      continue()
    endif()
    if(IS_ABSOLUTE "${source}")
      set(path "${source}")
    elseif(EXISTS "${source_dir}/${source}")
      set(path "${source_dir}/${source}")
    else()
      set(path "${binary_dir}/${source}")  # a generated source
    endif()
    cmake_path(NORMAL_PATH path)
    list(APPEND result "${path}")
  endforeach()
  list(REMOVE_DUPLICATES result)
  set(${out} "${result}" PARENT_SCOPE)
endfunction()

# _ciq_call_site(<out> <target>): "<file>:<line>: " of the ciq_tune_target(<target>) call, for the
# messages of the deferred finalisation, which CMake places at "CMakeLists.txt:DEFERRED". The file is
# the one the call ran in; the line, that of its first "ciq_tune_target(<target>" there ("" if none).
function(_ciq_call_site out target)
  get_target_property(file ${target} _CIQ_CALL_FILE)
  set(site "")
  if(file AND EXISTS "${file}")
    file(READ "${file}" text)
    string(REGEX REPLACE "([][+.*()^$?|\\])" "\\\\\\1" name "${target}")
    string(REGEX MATCH "^(.*)[Cc][Ii][Qq]_[Tt][Uu][Nn][Ee]_[Tt][Aa][Rr][Gg][Ee][Tt][ \t]*\\([ \t\r\n]*${name}[ \t\r\n)]"
      found "${text}")
    set(site "${file}: ")
    if(NOT found STREQUAL "")
      string(REGEX MATCHALL "\n" newlines "${CMAKE_MATCH_1}")
      list(LENGTH newlines count)
      math(EXPR line "${count} + 1")
      set(site "${file}:${line}: ")
    endif()
  endif()
  set(${out} "${site}" PARENT_SCOPE)
endfunction()

# _ciq_cuda_users(<out> <target> <dir>): the targets of <dir> and its subdirectories that link <target>
# (by its name or an alias of it) and compile CUDA sources of their own.
function(_ciq_cuda_users out target dir)
  set(found "")
  get_property(targets DIRECTORY "${dir}" PROPERTY BUILDSYSTEM_TARGETS)
  foreach(candidate IN LISTS targets)
    get_target_property(type "${candidate}" TYPE)
    if(type STREQUAL "INTERFACE_LIBRARY" OR type STREQUAL "UTILITY")
      continue()
    endif()
    get_target_property(linked "${candidate}" LINK_LIBRARIES)
    foreach(library IN LISTS linked)
      if(NOT TARGET "${library}")
        continue()
      endif()
      get_target_property(real "${library}" ALIASED_TARGET)
      if(NOT real)
        set(real "${library}")
      endif()
      if(real STREQUAL target)
        _ciq_cuda_sources(sources "${candidate}")
        if(NOT sources STREQUAL "")
          list(APPEND found "${candidate}")
        endif()
        break()
      endif()
    endforeach()
  endforeach()
  get_property(subdirectories DIRECTORY "${dir}" PROPERTY SUBDIRECTORIES)
  foreach(subdirectory IN LISTS subdirectories)
    _ciq_cuda_users(more ${target} "${subdirectory}")
    list(APPEND found ${more})
  endforeach()
  set(${out} "${found}" PARENT_SCOPE)
endfunction()

# _ciq_executables(<out> <dir>): the executable targets of <dir> and its subdirectories (for "did you mean").
function(_ciq_executables out dir)
  set(found "")
  get_property(targets DIRECTORY "${dir}" PROPERTY BUILDSYSTEM_TARGETS)
  foreach(candidate IN LISTS targets)
    get_target_property(type "${candidate}" TYPE)
    if(type STREQUAL "EXECUTABLE")
      list(APPEND found "${candidate}")
    endif()
  endforeach()
  get_property(subdirectories DIRECTORY "${dir}" PROPERTY SUBDIRECTORIES)
  foreach(subdirectory IN LISTS subdirectories)
    _ciq_executables(more "${subdirectory}")
    list(APPEND found ${more})
  endforeach()
  set(${out} "${found}" PARENT_SCOPE)
endfunction()

function(_ciq_finalize_target target)
  set(fn "ciq_tune_target(${target})")
  _ciq_cuda_sources(sources ${target})
  _ciq_findcuda_compiled(findcuda ${target})
  if(sources STREQUAL "" AND NOT findcuda STREQUAL "")
    list(JOIN findcuda ", " named)
    _ciq_call_site(site ${target})
    message(FATAL_ERROR "${site}${fn}: '${target}' has no CUDA sources that CMake compiles: FindCUDA's "
      "cuda_add_library() or cuda_add_executable() compiles ${named} by a command of its own, which "
      "no pinned flag reaches. Build the target with CMake's CUDA language instead: CUDA in project(... "
      "LANGUAGES CXX CUDA) or enable_language(CUDA), and add_library() or add_executable() for the "
      "target, with its nvcc flags in target_compile_options() (docs/cmake.md).")
  elseif(sources STREQUAL "")
    # A header-only library's kernels (stdgpu's, CUB's) are compiled by the targets that use it: name them.
    _ciq_cuda_users(users ${target} "${CMAKE_SOURCE_DIR}")
    set(hint "tune the target that compiles your kernels")
    if(NOT users STREQUAL "")
      list(LENGTH users count)
      list(SUBLIST users 0 8 shown)
      list(JOIN shown ", " named)
      if(count GREATER 8)
        string(APPEND named " and ${count} in all")
      endif()
      list(GET users 0 first)
      string(CONCAT hint "its kernels are compiled by the targets that use it. Targets that compile CUDA and "
        "link '${target}': ${named}; tune one of them, e.g. ciq_tune_target(${first} ...)")
    endif()
    _ciq_call_site(site ${target})
    message(FATAL_ERROR "${site}${fn}: '${target}' has no CUDA sources (.cu files or "
      "sources with LANGUAGE CUDA); ${hint}.")
  endif()

  if(CIQ_TUNE_TARGET STREQUAL target AND NOT "${CIQ_TUNE_ARCHITECTURES}" STREQUAL "")
    # tune --architecture: this scratch tree builds the tuned target for that
    # architecture alone (set here, after the project's own settings).
    set_target_properties(${target} PROPERTIES CUDA_ARCHITECTURES "${CIQ_TUNE_ARCHITECTURES}")
  endif()
  get_target_property(architectures ${target} CUDA_ARCHITECTURES)
  if(NOT architectures)
    set(architectures "")
  endif()
  get_target_property(pin_status ${target} CIQ_PIN_STATUS)
  get_target_property(checked ${target} _CIQ_PIN_ARCHITECTURES)
  if(NOT checked)
    set(checked "")
  endif()
  get_target_property(read ${target} _CIQ_ARCHITECTURES_READ)
  if(read AND NOT "${checked}" STREQUAL "${architectures}")
    # Deferred: CMake names no line of the caller, so the message names the call.
    _ciq_call_site(site ${target})
    get_target_property(pin_file ${target} CIQ_PIN_FILE)
    if(pin_status MATCHES "^(applied|skipped)$")
      set(why "which checked the pinned record ${pin_file} against the architectures as they were")
    else()
      string(CONCAT why "which reads them there: a tune would measure '${architectures}' and pin a record "
        "that this call then checks against '${checked}' and skips")
    endif()
    message(FATAL_ERROR "${site}${fn}: CUDA_ARCHITECTURES changed from '${checked}' to "
      "'${architectures}' after ciq_tune_target(), ${why}. Set CUDA_ARCHITECTURES "
      "(or CMAKE_CUDA_ARCHITECTURES) before calling ciq_tune_target().")
  endif()
  get_target_property(object_depends ${target} _CIQ_OBJECT_DEPENDS)
  foreach(source IN LISTS sources)
    set_property(SOURCE "${source}" TARGET_DIRECTORY ${target} APPEND
      PROPERTY OBJECT_DEPENDS ${object_depends})
  endforeach()

  get_target_property(benchmark ${target} _CIQ_BENCHMARK)
  if(benchmark)
    if(NOT TARGET "${benchmark}")
      _ciq_call_site(site ${target})
      _ciq_executables(executables "${CMAKE_SOURCE_DIR}")
      _ciq_rules_nearest(guess "${benchmark}" ${executables})
      set(hint "")
      if(NOT guess STREQUAL "")
        set(hint " (did you mean ${guess}?)")
      endif()
      message(FATAL_ERROR "${site}${fn}: BENCHMARK '${benchmark}' is not a target${hint}; "
        "name the add_executable() target of your benchmark.")
    endif()
    get_target_property(benchmark_type "${benchmark}" TYPE)
    if(NOT benchmark_type STREQUAL "EXECUTABLE")
      _ciq_call_site(site ${target})
      message(FATAL_ERROR "${site}${fn}: BENCHMARK '${benchmark}' is a "
        "${benchmark_type}; it must be an executable.")
    endif()
    get_target_property(benchmark_args ${target} _CIQ_ARGS)
    _ciq_json_string(benchmark_name "${benchmark}")
    _ciq_json_array(benchmark_args ${benchmark_args})
    # ARGS_SETS: each "name:arguments" as {"name", "args"}, the arguments split like a shell's.
    get_target_property(args_sets ${target} _CIQ_ARGS_SETS)
    get_target_property(score ${target} _CIQ_SCORE)
    if(NOT score)
      set(score geomean)
    endif()
    set(sets_json "")
    foreach(entry IN LISTS args_sets)
      string(FIND "${entry}" ":" colon)
      string(SUBSTRING "${entry}" 0 ${colon} size)
      math(EXPR rest "${colon} + 1")
      string(SUBSTRING "${entry}" ${rest} -1 size_args)
      separate_arguments(size_args UNIX_COMMAND "${size_args}")
      _ciq_json_array(size_args_json ${size_args})
      if(NOT sets_json STREQUAL "")
        string(APPEND sets_json ", ")
      endif()
      # Appended as text: a CMake list would split inside the JSON's [ ].
      string(APPEND sets_json "{\"name\": \"${size}\", \"args\": ${size_args_json}}")
    endforeach()
    set(benchmark_json "{\"target\": ${benchmark_name}, \"path\": \"@CIQ_BENCHMARK_PATH@\", \"args\": ${benchmark_args}, \"args_sets\": [${sets_json}], \"score\": \"${score}\"}")
  else()
    set(benchmark_json "null")
  endif()

  get_target_property(source_dir ${target} SOURCE_DIR)
  get_target_property(binary_dir ${target} BINARY_DIR)
  # The benchmark's path and the object paths go into the manifest's JSON at
  # generate time, unescaped: the build tree's path must need no escaping.
  if("${CMAKE_BINARY_DIR};${binary_dir}" MATCHES "[\"\\\\]")
    message(FATAL_ERROR "${fn}: the build directory path contains a quote or "
      "backslash; use a plain path.")
  endif()
  foreach(property IN ITEMS METRIC METRIC_UNIT PIN_DIR OPTIONS_FILE DESCRIPTION)
    if(property STREQUAL "OPTIONS_FILE")
      get_target_property(value ${target} CIQ_OPTIONS_FILE)
    else()
      get_target_property(value ${target} _CIQ_${property})
    endif()
    _ciq_json_string(json_${property} "${value}")
  endforeach()
  foreach(property IN ITEMS OBJECTIVES PARAMS CONSTRAINTS SEARCH_SPACE SEEDS THREADS_PER_BLOCK)
    get_target_property(value ${target} _CIQ_${property})
    _ciq_json_array(json_${property} ${value})
  endforeach()
  get_target_property(timeout ${target} _CIQ_TIMEOUT)
  get_target_property(allow_numerics ${target} _CIQ_ALLOW_NUMERICS)
  if(allow_numerics)
    set(allow_numerics true)
  else()
    set(allow_numerics false)
  endif()
  get_target_property(pin_file ${target} CIQ_PIN_FILE)
  get_target_property(compiler ${target} _CIQ_CUDA_COMPILER)
  get_target_property(compiler_version ${target} _CIQ_CUDA_COMPILER_VERSION)
  foreach(name IN ITEMS target CMAKE_SOURCE_DIR CMAKE_BINARY_DIR source_dir binary_dir
      pin_file CMAKE_GENERATOR compiler compiler_version architectures)
    _ciq_json_string(json_${name} "${${name}}")
  endforeach()
  _ciq_json_array(json_sources ${sources})
  _ciq_json_string(json_object_dir "${binary_dir}/CMakeFiles/${target}.dir")

  string(JOIN "\n" manifest
    "{"
    "  \"schema\": 2,"
    "  \"target\": ${json_target},"
    "  \"description\": ${json_DESCRIPTION},"
    "  \"source_dir\": ${json_CMAKE_SOURCE_DIR},"
    "  \"binary_dir\": ${json_CMAKE_BINARY_DIR},"
    "  \"target_source_dir\": ${json_source_dir},"
    "  \"target_binary_dir\": ${json_binary_dir},"
    "  \"cuda_sources\": ${json_sources},"
    "  \"object_dir\": ${json_object_dir},"
    "  \"objects\": [@CIQ_OBJECTS@],"
    "  \"benchmark\": ${benchmark_json},"
    "  \"metric_regex\": ${json_METRIC},"
    "  \"metric_unit\": ${json_METRIC_UNIT},"
    "  \"objectives\": ${json_OBJECTIVES},"
    "  \"params\": ${json_PARAMS},"
    "  \"constraints\": ${json_CONSTRAINTS},"
    "  \"seeds\": ${json_SEEDS},"
    "  \"search_space\": ${json_SEARCH_SPACE},"
    "  \"pin_dir\": ${json_PIN_DIR},"
    "  \"pin_file\": ${json_pin_file},"
    "  \"timeout\": ${timeout},"
    "  \"threads_per_block\": ${json_THREADS_PER_BLOCK},"
    "  \"options_file\": ${json_OPTIONS_FILE},"
    "  \"generator\": ${json_CMAKE_GENERATOR},"
    "  \"allow_numerics\": ${allow_numerics},"
    "  \"toolchain\": {\"cuda_compiler\": ${json_compiler}, \"cuda_compiler_version\": ${json_compiler_version}, \"architectures\": ${json_architectures}}"
    "}"
    "")
  # Everything is literal text except the benchmark's path and the object
  # files, known only at generate time.
  _ciq_genex_literal(manifest "${manifest}")
  if(benchmark)
    string(REPLACE "@CIQ_BENCHMARK_PATH@" "$<TARGET_FILE:${benchmark}>" manifest "${manifest}")
  endif()
  # The target's own object files, as CMake names them (never a glob of its
  # object folder, which keeps objects of sources deleted since).
  set(objects "$<TARGET_OBJECTS:${target}>")
  string(REPLACE "@CIQ_OBJECTS@"
    "$<$<BOOL:${objects}>:\"$<JOIN:${objects},\"$<COMMA> \">\">" manifest "${manifest}")
  file(GENERATE OUTPUT "${CMAKE_BINARY_DIR}/ciq/targets/${target}.json"
    CONTENT "${manifest}")
endfunction()

# A tuning build for a target that is not registered would silently tune
# nothing; say so.
function(_ciq_check_tune_target)
  if(NOT "${CIQ_TUNE_TARGET}" STREQUAL "")
    get_property(registered GLOBAL PROPERTY CIQ_BUILD_TARGETS)
    if(NOT CIQ_TUNE_TARGET IN_LIST registered)
      message(FATAL_ERROR "ciq_tune_target: CIQ_TUNE_TARGET is "
        "'${CIQ_TUNE_TARGET}', which no ciq_tune_target() call registered "
        "(registered: ${registered}).")
    endif()
  endif()
endfunction()

# _ciq_check_findcuda_toolkit(): the legacy FindCUDA module (find_package(CUDA)) looks for a toolkit of
# its own (nvcc on PATH, /usr/local/cuda), not CMAKE_CUDA_COMPILER's; one of another release puts that
# release's headers (CUDA_INCLUDE_DIRS) before nvcc's own, which breaks nvcc's compiles with errors that
# do not name the cause. Warned once a configure, where FindCUDA ran in it (its commands exist). Its
# version is the cached one: with CUDA a language, FindCUDA sets the variable CUDA_VERSION to the compiler's.
function(_ciq_check_findcuda_toolkit)
  set(found "$CACHE{CUDA_VERSION}")
  if(NOT COMMAND cuda_add_executable OR found STREQUAL "" OR "${CMAKE_CUDA_COMPILER_VERSION}" STREQUAL "")
    return()
  endif()
  string(REGEX MATCH "^[0-9]+\\.[0-9]+" compiler_release "${CMAKE_CUDA_COMPILER_VERSION}")
  if(found VERSION_EQUAL compiler_release)
    return()
  endif()
  cmake_path(GET CMAKE_CUDA_COMPILER PARENT_PATH compiler_bin)
  cmake_path(GET compiler_bin PARENT_PATH compiler_root)
  message(WARNING "ciq_build: find_package(CUDA) found CUDA ${found} ($CACHE{CUDA_TOOLKIT_ROOT_DIR}), "
    "but CMAKE_CUDA_COMPILER is nvcc ${CMAKE_CUDA_COMPILER_VERSION} (${CMAKE_CUDA_COMPILER}): FindCUDA's "
    "CUDA_INCLUDE_DIRS and CUDA_LIBRARIES are another release's, whose headers break nvcc's compiles "
    "(e.g. \"'__cudaLaunch' was not declared\"). Configure with "
    "-DCUDA_TOOLKIT_ROOT_DIR=\"${compiler_root}\" as well.")
endfunction()

cmake_policy(POP)
