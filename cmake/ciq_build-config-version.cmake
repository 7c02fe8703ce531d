# Version check for find_package(ciq_build <version> CONFIG).
#
# The version is read from the Python package's version.py so that it has a
# single source: ../version.py in an installed wheel (ciq_build/cmake/),
# ../ciq_build/version.py in a source checkout (cmake/).

set(PACKAGE_VERSION "")
foreach(_ciq_init IN ITEMS
    "${CMAKE_CURRENT_LIST_DIR}/../version.py"
    "${CMAKE_CURRENT_LIST_DIR}/../ciq_build/version.py")
  if(EXISTS "${_ciq_init}")
    file(STRINGS "${_ciq_init}" _ciq_line REGEX "^__version__ *= *\"[^\"]+\"")
    if(_ciq_line MATCHES "\"([^\"]+)\"")
      set(PACKAGE_VERSION "${CMAKE_MATCH_1}")
      break()
    endif()
  endif()
endforeach()
unset(_ciq_init)
unset(_ciq_line)

if(PACKAGE_VERSION STREQUAL "")
  # Version unknown: accept any request rather than refuse a working package.
  set(PACKAGE_VERSION "0")
  set(PACKAGE_VERSION_COMPATIBLE TRUE)
elseif(PACKAGE_FIND_VERSION STREQUAL "")
  set(PACKAGE_VERSION_COMPATIBLE TRUE)
elseif(PACKAGE_VERSION VERSION_LESS PACKAGE_FIND_VERSION)
  set(PACKAGE_VERSION_COMPATIBLE FALSE)
else()
  # 0.x releases may change the pinned-record schema between minor versions.
  string(REGEX MATCH "^[0-9]+" _ciq_have_major "${PACKAGE_VERSION}")
  string(REGEX MATCH "^[0-9]+" _ciq_want_major "${PACKAGE_FIND_VERSION}")
  if(_ciq_have_major STREQUAL _ciq_want_major)
    set(PACKAGE_VERSION_COMPATIBLE TRUE)
  else()
    set(PACKAGE_VERSION_COMPATIBLE FALSE)
  endif()
  if(PACKAGE_VERSION VERSION_EQUAL PACKAGE_FIND_VERSION)
    set(PACKAGE_VERSION_EXACT TRUE)
  endif()
  unset(_ciq_have_major)
  unset(_ciq_want_major)
endif()
