# ciq_build's CMake module, part: a ciq_tune_target() call checked (ciq_build.cmake includes it).
#
# Its entry, _ciq_check_call() (first below), refuses at the call's line a call that cannot work, and
# says what to do: unknown or incomplete keywords, a target that is not a library or executable built
# here, keywords that need one another (ARGS and BENCHMARK, UNIT and METRIC, ...), no CUDA; and, in
# _ciq_check_arguments(), the values that tune would refuse (PARAMS, CONSTRAINTS, OBJECTIVES,
# SEARCH_SPACE, ARGS_SETS, THREADS_PER_BLOCK, DYNAMIC_SHARED_MEMORY, SCORE, METRIC), by the rule book's
# words and patterns, with "did you mean" for a misspelt word.
#
# Separate because these checks are about what the user wrote, before any pin is read; they read
# ciq_tune_target()'s own parse (its ARG_*) by design and set nothing.

include_guard(GLOBAL)

# _ciq_check_call(<target>): refuse a ciq_tune_target() call that cannot
# work, with what to do. The check of ciq_tune_target()'s own parse: it reads
# the caller's ARG_* and sets nothing.
function(_ciq_check_call target)
  set(fn "ciq_tune_target(${target})")
  # ciq_tune_target()'s keywords, for "did you mean" (its cmake_parse_arguments() declares them).
  set(keywords BENCHMARK ARGS ARGS_SETS SCORE METRIC UNIT OBJECTIVES PARAMS CONSTRAINTS SEARCH_SPACE SEEDS
    PIN_DIR TIMEOUT THREADS_PER_BLOCK DYNAMIC_SHARED_MEMORY DESCRIPTION ALLOW_NUMERICS)
  if(ARG_UNPARSED_ARGUMENTS)
    set(hint "")
    foreach(word IN LISTS ARG_UNPARSED_ARGUMENTS)  # a misspelt keyword (OBJECTIVE, SEARCHSPACE): say which
      _ciq_rules_nearest(guess "${word}" ${keywords})
      if(NOT guess STREQUAL "")
        set(hint " (did you mean ${guess} for ${word}?)")
        break()
      endif()
    endforeach()
    set(named ${keywords})
    list(POP_BACK named last)
    list(JOIN named ", " named)
    message(FATAL_ERROR "${fn}: unknown arguments '${ARG_UNPARSED_ARGUMENTS}'${hint}. "
      "Keywords are ${named} and ${last}.")
  endif()
  # A list keyword takes every word up to the next keyword, so a misspelt keyword after it became one of its
  # values: an argument of the benchmark without a word (a new user's "ARGS 256000 OBJECTIVE spill_bytes
  # registers": no objectives), or "OBJECTIVES 'THREAD_PER_BLOCK' is not an objective" (another's). A PARAMS
  # name is a value where the names are (THREADS_PER_BLOCK, CONSTRAINTS); SEEDS' paths may be any word.
  set(param_names "")
  foreach(param IN LISTS ARG_PARAMS)
    string(REGEX REPLACE "=.*$" "" name "${param}")
    list(APPEND param_names "${name}")
  endforeach()
  foreach(keyword IN ITEMS ARGS ARGS_SETS OBJECTIVES PARAMS CONSTRAINTS SEARCH_SPACE THREADS_PER_BLOCK
      DYNAMIC_SHARED_MEMORY)
    set(others ${keywords})
    list(REMOVE_ITEM others ${keyword})
    foreach(word IN LISTS ARG_${keyword})
      if(word MATCHES "^[A-Z][A-Z_]+$" AND NOT word IN_LIST param_names)
        _ciq_rules_nearest(guess "${word}" ${others})
        if(NOT guess STREQUAL "")
          set(as "one of its values")
          if(keyword STREQUAL "ARGS")
            set(as "an argument of the benchmark")
          endif()
          message(FATAL_ERROR "${fn}: ${keyword} '${ARG_${keyword}}' holds ${word} (did you mean ${guess}?): "
            "${keyword} takes every word up to the next keyword, so a misspelt keyword after it is ${as}.")
        endif()
      endif()
    endforeach()
  endforeach()
  foreach(keyword IN ITEMS BENCHMARK METRIC UNIT PIN_DIR TIMEOUT SCORE DESCRIPTION THREADS_PER_BLOCK
      DYNAMIC_SHARED_MEMORY)
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
  if(DEFINED ARG_UNIT)  # else ms, filled in by ciq_tune_target()
    _ciq_rules_matches(unit_ok metric_unit "${ARG_UNIT}")
    if(NOT unit_ok)
      _ciq_rules_message(said unknown_metric_unit value "${ARG_UNIT}")
      message(FATAL_ERROR "${fn}: ${said}.")
    elseif(NOT DEFINED ARG_METRIC)
      message(FATAL_ERROR "${fn}: UNIT is the unit of METRIC's number; give "
        "METRIC <regex> too (CIQ_METRIC time_ms=... lines are always milliseconds).")
    endif()
  endif()
  if(NOT CMAKE_CUDA_COMPILER_VERSION)
    # enable_language(CUDA) in a subdirectory enables it there alone (cuda-api-wrappers' examples/): a call at
    # the top level, after add_subdirectory(), was told to add what the project already had.
    if(TARGET ${target})
      get_target_property(made_in ${target} SOURCE_DIR)
      get_directory_property(there DIRECTORY "${made_in}" DEFINITION CMAKE_CUDA_COMPILER_VERSION)
      if(there)
        message(FATAL_ERROR "${fn}: CUDA is enabled in ${made_in}, where '${target}' is made, not in "
          "${CMAKE_CURRENT_SOURCE_DIR}, where this call is: call ciq_tune_target(${target} ...) in "
          "${made_in}/CMakeLists.txt, after the target, or add CUDA to the top-level project().")
      endif()
    endif()
    # A target FindCUDA's cuda_add_executable() makes (wangzyon's SGEMM): enabling CUDA would only lead to the next
    # refusal, at the end of the configure, that its .cu files are compiled by commands no pin reaches.
    if(TARGET ${target})
      _ciq_findcuda_compiled(findcuda ${target})
      if(NOT findcuda STREQUAL "")
        list(JOIN findcuda ", " named)
        message(FATAL_ERROR "${fn}: CUDA is not enabled here, and '${target}' is made by FindCUDA's "
          "cuda_add_executable() or cuda_add_library(), which compiles ${named} by a command of its own that no "
          "pinned flag reaches, CUDA enabled or not. Build the target with CMake's CUDA language instead: CUDA in "
          "project(... LANGUAGES CXX CUDA) or enable_language(CUDA), and add_executable() or add_library() for the "
          "target, with its nvcc flags in target_compile_options() (docs/cmake.md).")
      endif()
    endif()
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
  _ciq_rules_words(kernel_objectives kernel_objective)
  list(JOIN kernel_objectives "|" kernel_objectives)
  foreach(objective IN LISTS ARG_OBJECTIVES)
    _ciq_rules_matches(ok objective_spec "${objective}")
    set(per_kernel FALSE)
    if(objective MATCHES "^((max|min):)?(${kernel_objectives}):(.*)$")
      set(per_kernel TRUE)
      set(regex "${CMAKE_MATCH_4}")
      if(ok)  # objective_spec takes a longer regex than the rule book's kernel_regex
        _ciq_rules_matches(ok kernel_regex "${regex}")
      endif()
    endif()
    if(NOT ok)
      string(REGEX REPLACE "^(max|min):" "" base "${objective}")
      string(REGEX REPLACE ":.*$" "" base "${base}")
      _ciq_rules_did_you_mean(hint "${base}" ${objectives})
      _ciq_rules_message(said unknown_objective value "${objective}" hint "${hint}" words "${shown}")
      # A per-kernel objective whose regex the rule book's kernel_regex refuses: what a regex may hold.
      if(per_kernel)
        _ciq_rules_kernel_regex_hint(hint "${objective}" "${regex}")
        _ciq_rules_message(said kernel_regex value "${objective}" regex "${regex}" hint "${hint}")
      endif()
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
      _ciq_rules_did_you_mean(hint "${base}" ${kinds})
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
  # THREADS_PER_BLOCK and DYNAMIC_SHARED_MEMORY <number | PARAMS name | expression over them> [<the defaults'
  # number>] (ciq_build/project/per_block.py, whose THREADS and DYNAMIC_SHARED rows give each its unit, range and
  # example, as here): the expression in the CONSTRAINTS language.
  foreach(setting IN ITEMS "THREADS_PER_BLOCK|threads|1|1024|256" "DYNAMIC_SHARED_MEMORY|bytes|0|233472|65536")
    string(REPLACE "|" ";" setting "${setting}")
    list(GET setting 0 keyword)
    list(GET setting 1 unit)
    list(GET setting 2 least)
    list(GET setting 3 most)
    list(GET setting 4 example)
    list(LENGTH ARG_${keyword} count)
    if(count EQUAL 0)
      continue()
    endif()
    string(CONCAT form "${keyword} ${example}, ${keyword} <a PARAMS name> [<the defaults' ${unit}>] or "
      "${keyword} \"<expression over PARAMS names>\" [<the defaults' ${unit}>]")  # set() would join with ;
    list(GET ARG_${keyword} 0 expression)
    _ciq_rules_constraint_problem(problem "${expression}" ${names})
    if(count GREATER 2)
      message(FATAL_ERROR "${fn}: ${keyword} takes one or two values, not '${ARG_${keyword}}': ${form}.")
    elseif(NOT problem STREQUAL "")
      message(FATAL_ERROR "${fn}: ${keyword} '${expression}': ${problem}. ${form}.")
    elseif(count EQUAL 2)
      list(GET ARG_${keyword} 1 value)
      if(NOT value MATCHES "^(0|[1-9][0-9]*)$" OR value LESS least OR value GREATER most)
        message(FATAL_ERROR "${fn}: ${keyword} ${expression} ${value}: the defaults' ${unit} a block "
          "is a number from ${least} to ${most}.")
      endif()
    endif()
  endforeach()
  if(DEFINED ARG_SCORE)
    _ciq_rules_words(scores score)
    if(NOT ARG_SCORE IN_LIST scores)
      _ciq_rules_did_you_mean(hint "${ARG_SCORE}" ${scores})
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
    # A '|' outside every group makes alternatives of which one holds the number: a line another matches gives
    # none, and the last line matched counts. CMake itself makes one of a quoted "\|" (llm.c's "block_size +256
    # \| time ([0-9.]+) ms": the backslash is CMake's escape), which then read the time of another block size.
    set(outside "${plain}")
    while(outside MATCHES "[(][^()]*[)]")
      string(REGEX REPLACE "[(][^()]*[)]" "" outside "${outside}")
    endwhile()
    if(outside MATCHES "[|]")
      _ciq_rules_message(said metric_alternatives value "${ARG_METRIC}")
      message(FATAL_ERROR "${fn}: ${said}.")
    endif()
  endif()
endfunction()
