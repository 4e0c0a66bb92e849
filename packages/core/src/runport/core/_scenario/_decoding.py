"""Reading a scenario file's text and turning every refusal into one ``ScenarioError`` that
names the file, the turn, the event and the offending kind or field."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Annotated, Final, TypeVar

from pydantic import BaseModel, ConfigDict, Field, JsonValue, ValidationError, field_validator

from runport.contracts import ErrorCode
from runport.core._scenario._expectations import require_json


class ScenarioError(Exception):
    """A scenario file or mapping that cannot be played.

    ``code`` is always ``TQX_DATA_INVALID`` (docs/wire-types.md: a fixture a runtime cannot
    use), so a surface can report it like any other runport failure; ``source`` is the file,
    when known.
    """

    code: Final = ErrorCode.DATA_INVALID.value

    def __init__(self, message: str, *, source: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.source = source


class Where:
    """Builds error messages that name the file, turn, event and kind."""

    def __init__(self, source: str | None, place: str = "") -> None:
        self.source = source
        self.place = place

    def at(self, place: str) -> Where:
        return Where(self.source, f"{self.place}, {place}" if self.place else place)

    def error(self, problem: str) -> ScenarioError:
        prefix = self.source or "<scenario>"
        if self.place:
            prefix = f"{prefix}: {self.place}"
        return ScenarioError(f"{prefix}: {problem}", source=self.source)


def type_name(value: object) -> str:
    return "null" if value is None else type(value).__name__


class File(BaseModel):
    """A file-level shape: strict types (``true`` is not ``1``), unknown fields refused."""

    model_config = ConfigDict(extra="forbid", strict=True)


NonEmpty = Annotated[str, Field(min_length=1)]
Count = Annotated[int, Field(ge=0)]


class TextFields(File):
    """A piece of text: a ``delta`` in either format (templiqx ``reasoning`` too)."""

    text: NonEmpty


class UsageFields(File):
    """Token counts, as both formats spell them."""

    input_tokens: Count
    output_tokens: Count


class OutputFields(File):
    """An explicit answer, held to JSON's rules."""

    output: JsonValue = None

    _json_output = field_validator("output")(require_json)


_M = TypeVar("_M", bound=BaseModel)


def _describe(error: ValidationError) -> str:
    problems: list[str] = []
    for detail in error.errors(include_url=False):
        loc = ".".join(str(part) for part in detail["loc"])
        kind = detail["type"]
        if kind == "extra_forbidden":
            problems.append(f"unknown field {loc!r}")
        elif kind == "missing":
            problems.append(f"missing field {loc!r}")
        else:
            message = str(detail["msg"]).removeprefix("Value error, ")
            problems.append(f"field {loc!r}: {message}" if loc else message)
    return "; ".join(problems)


def check(model: type[_M], data: object, where: Where) -> _M:
    """``data`` validated as ``model``, or the ``ScenarioError`` listing what is wrong."""
    if not isinstance(data, Mapping):
        raise where.error(f"expected a mapping, not {type_name(data)}")
    try:
        return model.model_validate(data)
    except ValidationError as error:
        raise where.error(_describe(error)) from None


def kind_of(data: object, kinds: Mapping[str, object], where: Where, noun: str) -> str:
    """The ``kind`` of one event or step, refused unless it is one of ``kinds``."""
    if not isinstance(data, Mapping):
        raise where.error(f"{noun} is a mapping, not {type_name(data)}")
    kind = data.get("kind")
    if "kind" not in data:
        raise where.error("missing field 'kind'")
    if not isinstance(kind, str) or kind not in kinds:
        raise where.error(f"unknown kind {kind!r} (expected one of {', '.join(kinds)})")
    return kind


def decode_each(
    items: Sequence[object], models: Mapping[str, type[_M]], where: Where, noun: str, what: str
) -> Iterator[tuple[int, _M, Where]]:
    """Each item of a list of events or steps, read as the model its ``kind`` names, with its
    number and where it stands (``{noun} {number} ({kind})``) for the checks that follow."""
    for number, item in enumerate(items):
        kind = kind_of(item, models, where.at(f"{noun} {number}"), what)
        at = where.at(f"{noun} {number} ({kind})")
        yield number, check(models[kind], item, at), at


def valid_code(code: str) -> str:
    if code not in ErrorCode._value2member_map_:
        raise ValueError(f"unknown error code {code!r}")
    return code
