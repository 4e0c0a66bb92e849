"""runport.conformance."""

__all__: list[str] = []
