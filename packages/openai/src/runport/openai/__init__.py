"""runport.openai."""

__all__: list[str] = []
