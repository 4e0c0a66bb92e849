"""The pytest plugin entry point (pytest11)."""
