from __future__ import annotations


class CliError(Exception):
    """A failure the command reports as one line on stderr and turns into an exit status."""

    def __init__(self, code: str, message: str, *, status: int = 1) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.status = status


USAGE = 1
NOT_OK = 2
