# ciq_build's CMake module, part: a pinned record read and checked (ciq_build.cmake includes it).
#
# Its entry, _ciq_read_pin() (first below), reads <pin dir>/<target>.json through the rule book's three
# layers (ciq_build_rules_record.cmake) and checks it across its fields and against the target (its
# PARAMS, ALLOW_NUMERICS, its ACFs' names and sha256): the CMake side of ciq_build/pin/read.py, the
# same checks in the same order, in the same words. Every part refuses a record through the functions
# of "How a record is refused" here: a configure error, or under _CIQ_CHECK_ONLY
# (ciq_build_check_pin.cmake) a verdict that the checking function returns with.
#
# Separate because a record is untrusted input and Python makes every one of these checks too
# (tests/core/test_rule_book_agreement.py compares the verdicts): this file answers "is this record
# sound for this target?", never "does it fit this build?" (ciq_build_resolve.cmake).

include_guard(GLOBAL)

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

# ---------------------------------------------------------------------------
# How a record is refused
# ---------------------------------------------------------------------------

# _ciq_pin_error(<target> <pin_file> <message>...): refuse a pinned record.
# Under _CIQ_CHECK_ONLY (ciq_build_check_pin.cmake, many records in one
# process) the refusal goes to the global property _CIQ_PIN_REFUSED instead,
# and the caller's _ciq_pin_stop() returns from the checking function.
function(_ciq_pin_error target pin_file)
  _ciq_joined(text 2 ${ARGC})
  _ciq_pin_refuse("ciq_tune_target(${target}): refusing the pinned record ${pin_file}: ${text}")
endfunction()

# _ciq_pin_invalid(<target> <pin_file> <message>...): refuse a record that is wrong as written (the
# message a sentence that ends in '.'), with the one way out of that: restore it, or retune.
function(_ciq_pin_invalid target pin_file)
  _ciq_joined(text 2 ${ARGC})
  _ciq_pin_error(${target} "${pin_file}" "${text} Restore it from version control, or retune with "
    "`python -m ciq_build tune ${target}`.")
endfunction()

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

# ---------------------------------------------------------------------------
# The steps of _ciq_read_pin(), in the order it runs them
# ---------------------------------------------------------------------------

# _ciq_read_record_json(TARGET <target> PIN_FILE <file> JSON_VAR <out>): the
# record's text, through the rule book's three layers (a regular file within its
# size limit, the strict JSON subset, each field), its schema and its target
# checked (pin/read.py read_record's first steps).
function(_ciq_read_record_json)
  cmake_parse_arguments(PARSE_ARGV 0 arg "" "TARGET;PIN_FILE;JSON_VAR" "")
  set(target "${arg_TARGET}")
  set(pin_file "${arg_PIN_FILE}")
  _ciq_rules_read_file(json problem "${pin_file}" record_bytes)
  if(problem STREQUAL "")
    _ciq_rules_syntax(problem "${json}")
    if(NOT problem STREQUAL "")
      set(problem "it ${problem}")
    endif()
  endif()
  if(NOT problem STREQUAL "")
    _ciq_pin_invalid(${target} "${pin_file}" "${problem}.")
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
    _ciq_pin_invalid(${target} "${pin_file}" "${where} ${problem}.")
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
        _ciq_pin_invalid(${arg_TARGET} "${arg_PIN_FILE}" "objectives name '${name}' twice.")
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
    _ciq_pin_invalid(${arg_TARGET} "${arg_PIN_FILE}" "${arg_WHERE} needs one score and one "
      "spread per objective (${arg_OBJECTIVES}), has ${scores} and ${spread}.")
  endif()
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
  _ciq_json_items(written "${json}" toolchain architectures)
  string(JSON type ERROR_VARIABLE missing TYPE "${json}" toolchain architectures)
  if(NOT missing AND written STREQUAL "")
    _ciq_pin_invalid(${target} "${arg_PIN_FILE}" "toolchain.architectures is empty; list the "
      "architectures the record was tuned for (e.g. [\"90a\"]), or leave the field out for "
      "nvcc's default.")
    return()
  endif()
  set(index 0)
  foreach(arch IN LISTS written)
    _ciq_architecture_set(name "${arch}")
    _ciq_rules_matches(ok tuned_arch "${name}")
    if(NOT ok)
      _ciq_pin_invalid(${target} "${arg_PIN_FILE}" "toolchain.architectures[${index}] is '${arch}', "
        "which names no CUDA architecture (e.g. 90a, sm_100a, 120, native).")
      return()
    endif()
    math(EXPR index "${index} + 1")
  endforeach()
  _ciq_architecture_set(tuned ${written})
  set(entries "")
  _ciq_json_items(keys "${json}" per_architecture)
  foreach(arch IN LISTS keys)
    if(NOT arch IN_LIST tuned)
      list(JOIN tuned ", " shown)
      if(shown STREQUAL "")
        set(shown none)
      endif()
      _ciq_pin_invalid(${target} "${arg_PIN_FILE}" "per_architecture.${arch} is an entry for "
        "${arch}, which toolchain.architectures does not name (${shown}); add ${arch} "
        "there, or remove the entry.")
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
  set(${arg_WRITTEN_VAR} "${written}" PARENT_SCOPE)
  set(${arg_TUNED_VAR} "${tuned}" PARENT_SCOPE)
  set(${arg_ENTRIES_VAR} "${entries}" PARENT_SCOPE)
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
      _ciq_pin_invalid(${arg_TARGET} "${arg_PIN_FILE}" "${where_${arch}}.defines differ from "
        "${where_${first}}.defines: a -D parameter reaches the host compile, which nvcc "
        "runs once for every architecture. Give every architecture the same PARAMS values "
        "(tune each with --architecture and the same values), or tune all architectures "
        "together.")
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
  # Flags: the rule book checked each; here, how they combine.
  _ciq_json_items(flags "${json}" ${arg_KEYS} flags)
  list(REMOVE_DUPLICATES flags)
  list(SORT flags)
  set(options "")
  foreach(flag IN LISTS flags)
    _ciq_option_name(option "${flag}")
    if(option IN_LIST options)
      _ciq_pin_invalid(${target} "${pin_file}" "two flags set the compiler option "
        "${option}; keep one of them.")
      _ciq_pin_stop()
    endif()
    list(APPEND options "${option}")
  endforeach()
  _ciq_rules_conflicts(conflict "${flags}")
  if(NOT conflict STREQUAL "")
    _ciq_pin_invalid(${target} "${pin_file}" "ptxas refuses the flags ${conflict} "
      "together; keep one of them.")
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
      _ciq_pin_invalid(${target} "${pin_file}" "${where}.acf.file is '${acf_name}', which is not an "
        "ACF of this target: its name must be ${target}.acf or ${target}.<...>.acf (as tune pins it).")
      _ciq_pin_stop()
    endif()
    set(acf_path "${arg_PIN_DIR}/${acf_name}")
    if(NOT EXISTS "${acf_path}" AND NOT IS_SYMLINK "${acf_path}")
      _ciq_pin_invalid(${target} "${pin_file}" "its ACF ${acf_path} does not exist.")
      _ciq_pin_stop()
    endif()
    _ciq_rules_check_file(problem "${acf_path}" acf_bytes)
    if(NOT problem STREQUAL "")
      _ciq_pin_invalid(${target} "${pin_file}" "its ACF ${problem}.")
      _ciq_pin_stop()
    endif()
    file(SHA256 "${acf_path}" actual_sha)
    if(NOT actual_sha STREQUAL acf_sha)
      _ciq_pin_invalid(${target} "${pin_file}" "the sha256 of ${acf_path} is "
        "${actual_sha}, the record says ${acf_sha}: the ACF is not the one that "
        "was measured.")
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
  _ciq_json_items(names "${json}" ${arg_KEYS} defines)
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

  set(${arg_DEFINES_VAR} "${defines}" PARENT_SCOPE)
endfunction()

# _ciq_json_items(<out> <json> <key>...): what the record holds at <key>..., as a list: an array's
# strings, or an object's member names in the record's order; empty when there is neither (the rule
# book has checked each item and name).
function(_ciq_json_items out json)
  set(items "")
  string(JSON type ERROR_VARIABLE missing TYPE "${json}" ${ARGN})
  if(NOT missing AND type MATCHES "^(ARRAY|OBJECT)$")
    set(read GET)
    if(type STREQUAL "OBJECT")
      set(read MEMBER)
    endif()
    string(JSON count LENGTH "${json}" ${ARGN})
    if(count GREATER 0)
      math(EXPR last "${count} - 1")
      foreach(index RANGE ${last})
        string(JSON item ${read} "${json}" ${ARGN} ${index})
        list(APPEND items "${item}")
      endforeach()
    endif()
  endif()
  set(${out} "${items}" PARENT_SCOPE)
endfunction()
