"""The CUDA compiler: finding it, the controls it takes, ACFs, static metrics and code fingerprints."""
