"""``PortError`` is defined with the wire types (``runport.contracts``), so that core's turn
assembly raises it too; ``runport.ports.PortError`` is that same class, not a twin."""

from __future__ import annotations

import pytest

from runport.contracts import ErrorCode
from runport.contracts import PortError as ContractsPortError
from runport.ports import PortError


def test_the_port_error_is_the_contracts_one() -> None:
    assert PortError is ContractsPortError
    with pytest.raises(PortError) as raised:
        raise ContractsPortError(ErrorCode.RUNTIME_TIMEOUT, "slow")
    assert raised.value.code == "TQX_RUNTIME_TIMEOUT"
    assert raised.value.retryable
