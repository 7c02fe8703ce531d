"""Sources of candidates: the interface, ciq_build's genetic search, compileiq, ACF pools."""
