# With TRANSIENT_EXCLUSIVE_WRITES set, a configure (CMakeLists.txt) or a stamp (stamp.cmake) that overlaps
# another configure or stamp of this source tree fails (a lock held for a second), as a configure_file into
# the sources can when two run at once.
if(DEFINED ENV{TRANSIENT_EXCLUSIVE_WRITES})
  file(LOCK "${CMAKE_CURRENT_LIST_DIR}/configure.lock" TIMEOUT 0 RESULT_VARIABLE locked)
  if(NOT locked EQUAL 0)
    message(FATAL_ERROR "another configure or stamp of this source tree is running (${locked})")
  endif()
  execute_process(COMMAND "${CMAKE_COMMAND}" -E sleep 1)
endif()
