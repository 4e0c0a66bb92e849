from __future__ import annotations

import pytest

from runport.application import AdapterNotFoundError, adapter_entry_points, create_adapter


def test_an_unknown_adapter_names_what_is_installed() -> None:
    with pytest.raises(AdapterNotFoundError, match="no adapter named 'nope'"):
        create_adapter("nope")


def test_entry_points_are_keyed_by_name() -> None:
    found = adapter_entry_points()
    assert all(ep.group == "runport.adapters" for ep in found.values())
    assert all(name == ep.name for name, ep in found.items())
