"""The pinned record: writing, reading, validating it, and verifying a build applied it."""
