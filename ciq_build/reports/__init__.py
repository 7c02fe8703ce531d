"""What a tune did, read back afterwards: its history from the journal and record, `show`/`list`, the report page, `export`."""
