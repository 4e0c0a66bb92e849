"""Results as JSON the way events are: ``model_dump`` / ``model_dump_json`` /
``model_validate_json`` on the frozen dataclasses a run returns, through pydantic's own
serializer, so every receipt and message inside has the bytes its own ``model_dump_json``
gives."""

from __future__ import annotations

from typing import Any, Literal, Self

from pydantic import TypeAdapter

__all__ = ["JSONResult"]


_ADAPTERS: dict[str, TypeAdapter[Any]] = {}


def _adapter(kind: type[Any]) -> TypeAdapter[Any]:
    """The type's adapter, made on first use (building one costs more than a dump)."""
    name = f"{kind.__module__}.{kind.__qualname__}"
    adapter = _ADAPTERS.get(name)
    if adapter is None:
        adapter = _ADAPTERS[name] = TypeAdapter(kind)
    return adapter


class JSONResult:
    """The pydantic-model methods of a result dataclass (mixed in)."""

    __slots__ = ()

    def model_dump(self, *, mode: Literal["python", "json"] = "python") -> dict[str, Any]:
        """The result as a dict; ``mode="json"`` gives only JSON values."""
        dumped: dict[str, Any] = _adapter(type(self)).dump_python(self, mode=mode)
        return dumped

    def model_dump_json(self, *, indent: int | None = None) -> str:
        """The result as JSON, as an event's ``model_dump_json`` gives it."""
        return _adapter(type(self)).dump_json(self, indent=indent).decode("utf-8")

    @classmethod
    def model_validate_json(cls, data: str | bytes) -> Self:
        """The result ``model_dump_json`` wrote (``ValidationError`` for anything else)."""
        parsed: Self = _adapter(cls).validate_json(data)
        return parsed
