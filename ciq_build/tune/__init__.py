"""The tuning driver and what it reports."""
