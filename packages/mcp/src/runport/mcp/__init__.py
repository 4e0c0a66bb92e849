"""runport.mcp."""

__all__: list[str] = []
