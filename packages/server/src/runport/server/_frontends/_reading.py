"""Reading a frontend request's body: typed models (strict JSON kinds, no field they do not
name), their errors worded as the documented coded 400s (adr/0041). A value of the wrong JSON
kind is the same refusal as any other bad value, never an error of the server's own."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from runport.contracts import ErrorCode
from runport.server._errors import RequestRefused


def bad(message: str) -> RequestRefused:
    return RequestRefused(400, ErrorCode.DATA_INVALID, message)


Model = TypeVar("Model", bound=BaseModel)


class RequestModel(BaseModel):
    """A request's object, typed: strict JSON kinds, no field it does not name."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


def read_model(
    model: type[Model],
    data: Mapping[str, Any],
    refusals: Mapping[str, str | Callable[[Any], str]],
    unknown: Callable[[list[str]], str],
) -> Model:
    """``data`` as ``model``, or the 400 its first wrong field says: ``unknown`` words the
    fields the model does not name, ``refusals`` every other field's (by its JSON name; a
    function is given the value the request sent)."""
    try:
        return model.model_validate(data)
    except ValidationError as error:
        problems = error.errors()
    extra = sorted(
        str(problem["loc"][0]) for problem in problems if problem["type"] == "extra_forbidden"
    )
    if extra:
        raise bad(unknown(extra))
    field = str(problems[0]["loc"][0])
    refusal = refusals.get(field, f"{field!r} is not a value of the kind it takes")
    raise bad(refusal if isinstance(refusal, str) else refusal(data.get(field)))
