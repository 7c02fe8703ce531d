string(TIMESTAMP STAMP "%Y-%m-%dT%H:%M:%S.%f")
configure_file("${IN}" "${OUT}" @ONLY)
