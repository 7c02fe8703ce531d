"""Sources of candidates: the interface, the evaluation record and its table, ciq_build's genetic search, compileiq, ACF pools."""
