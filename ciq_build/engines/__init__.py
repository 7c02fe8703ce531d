"""Candidate generators other than ciq_build's own genetic search."""
