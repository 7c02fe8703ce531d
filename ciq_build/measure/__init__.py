"""Running things and measuring them: safe subprocesses and the benchmark protocol."""
