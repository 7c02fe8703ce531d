include("${CMAKE_CURRENT_LIST_DIR}/exclusive_writes.cmake")
string(TIMESTAMP STAMP "%Y-%m-%dT%H:%M:%S.%f")
configure_file("${IN}" "${OUT}" @ONLY)
