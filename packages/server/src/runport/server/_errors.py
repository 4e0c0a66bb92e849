"""The JSON every refused request gets: a stable ``TQX_`` code and one readable sentence."""

from __future__ import annotations

from starlette.responses import JSONResponse

from runport.contracts import ErrorCode


class RequestRefused(Exception):
    """A request the server will not run; it becomes ``error_response`` with its status."""

    def __init__(
        self, status: int, code: ErrorCode, message: str, headers: dict[str, str] | None = None
    ) -> None:
        super().__init__(f"{code}: {message}")
        self.status = status
        self.code = code
        self.message = message
        self.headers = headers


def error_response(refused: RequestRefused) -> JSONResponse:
    return JSONResponse(
        {"error": {"code": str(refused.code), "message": refused.message}},
        status_code=refused.status,
        headers=refused.headers,
    )
