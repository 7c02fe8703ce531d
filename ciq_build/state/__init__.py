"""What survives a run: the journal, the target lock, durable writes."""
