"""The tuning driver: one run of one target, and what it says while it runs."""
