"""A pilot round's script (see experiments/pilot/README.md)."""
