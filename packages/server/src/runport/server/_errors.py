"""The JSON every refused request gets: a stable ``TQX_`` code and one readable sentence."""

from __future__ import annotations

from starlette.responses import JSONResponse

from runport.application import Catalog
from runport.contracts import ErrorCode
from runport.core import Contract


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


def find_contract(catalog: Catalog, contract_id: str) -> Contract:
    """The contract a route names, or a 404 listing the ones the server has."""
    contract = catalog.get(contract_id)
    if contract is None:
        known = ", ".join(sorted(catalog)) or "none"
        raise RequestRefused(
            404,
            ErrorCode.CONTRACT_NOT_FOUND,
            f"no contract with id {contract_id!r} (known: {known})",
        )
    return contract
