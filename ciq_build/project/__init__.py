"""Building one tuned target: the CMake manifest, scratch trees, source fingerprints, preflight checks."""
