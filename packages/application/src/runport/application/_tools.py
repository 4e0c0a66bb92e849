from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, get_type_hints

from pydantic import BaseModel, ConfigDict, JsonValue, ValidationError, create_model

from runport.contracts import ToolSpec, canonical_json
from runport.ports import AsyncRuntimeAdapter, RuntimeAdapter

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from runport.application._contract import ContractSource
    from runport.application._options import RunOptions

DEFAULT_MAX_DEPTH = 4
"""How deep a chain of sub-runs (``Tool.from_contract``) may nest by default: four runs under
the first."""

ApprovalRule = bool | Callable[[dict[str, Any]], bool]
"""Whether a call needs a person's approval: always, never, or as a predicate over the call's
arguments."""


@dataclass(frozen=True, slots=True)
class Output:
    """What ``Tool.output`` wraps: a generator tool's result, not shown as progress."""

    value: Any


@dataclass(frozen=True)
class ClientToolError:
    """A client tool that failed, given as its ``tool_results=`` value: the model is told
    ``message`` as the tool's answer (as the AI SDK tells it an ``output-error``'s
    ``errorText``), and the call's ``ToolResult`` carries it as its ``error``."""

    message: str


class ToolArgumentsError(ValueError):
    """Arguments a tool's own signature refuses (after the JSON Schema accepted them)."""


@dataclass(frozen=True)
class Tool:
    """A function the model may call, with the JSON Schema it is offered under.

    Build one with :meth:`Tool.from_function`; the schema comes from the function's type hints, so
    what the model is told and what the function receives cannot drift apart.

    ``needs_approval`` (``False``): ``True``, or a predicate over a call's arguments that says
    so, makes a run pause before calling the function, until a person approves or denies the
    call (docs/runs.md, "A person in the loop").

    :meth:`Tool.client` declares a tool the caller runs itself (a frontend's): a call to it
    pauses the run until the caller sends its result (docs/runs.md, "Client tools").
    """

    name: str
    description: str
    parameters: Mapping[str, JsonValue]
    function: Callable[..., Any]
    arguments_model: type[BaseModel] | None = None
    needs_approval: ApprovalRule = False
    on_client: bool = False
    """Whether the caller runs this tool (``Tool.client``): the run never calls ``function``."""

    @classmethod
    def client(
        cls,
        name: str,
        description: str = "",
        parameters: Mapping[str, JsonValue] | None = None,
    ) -> Tool:
        """A tool the caller only declares and runs itself — a frontend's (AG-UI
        ``RunAgentInput.tools``, an AI SDK tool without ``execute``). The model is offered it
        under ``parameters`` (a JSON Schema; an object with no properties when omitted); a call
        to it (its arguments checked against that schema) pauses the run with a
        ``ClientToolCall`` pending, and ``run(..., continuation=…, tool_results={call_id:
        result})`` goes on with what the caller's tool returned (docs/runs.md, "Client
        tools")."""
        if not isinstance(name, str) or not name:
            raise ValueError(f"a client tool's name is a non-empty string, not {name!r}")
        schema: Mapping[str, JsonValue] = (
            {"type": "object", "properties": {}} if parameters is None else parameters
        )
        if not isinstance(schema, Mapping):
            raise TypeError(f"client tool {name!r}: parameters is a JSON Schema object")
        return cls(
            name=name,
            description=description,
            parameters=dict(schema),
            function=_runs_on_the_client,
            on_client=True,
        )

    @classmethod
    def from_function(
        cls,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        needs_approval: ApprovalRule = False,
    ) -> Tool:
        """A tool from a typed function: the name, the description (its docstring) and the
        JSON Schema of its arguments (its type hints) all come from the function itself."""
        hints = get_type_hints(fn)
        fields: dict[str, Any] = {}
        for parameter in inspect.signature(fn).parameters.values():
            if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
                raise TypeError(f"tool {fn.__name__!r}: *args and **kwargs cannot be offered")
            annotation = hints.get(parameter.name, Any)
            default = ... if parameter.default is parameter.empty else parameter.default
            fields[parameter.name] = (annotation, default)
        model = create_model(
            f"{fn.__name__}_arguments",
            __config__=ConfigDict(extra="forbid"),
            **fields,
        )
        schema = model.model_json_schema()
        schema.pop("title", None)
        doc = inspect.getdoc(fn) or ""
        return cls(
            name=name or fn.__name__,
            description=description if description is not None else doc.split("\n\n")[0],
            parameters=schema,
            function=fn,
            arguments_model=model,
            needs_approval=needs_approval,
        )

    @classmethod
    def from_contract(
        cls,
        contract: ContractSource,
        adapter: RuntimeAdapter | AsyncRuntimeAdapter,
        *,
        name: str | None = None,
        description: str | None = None,
        needs_approval: ApprovalRule = False,
        max_depth: int = DEFAULT_MAX_DEPTH,
        **options: Unpack[RunOptions],
    ) -> Tool:
        r"""A tool that is itself a run (docs/runs.md, "Sub-runs"): the model's arguments are
        the contract's inputs (its input schema is the tool's), and the call runs the contract
        on ``adapter`` with ``options`` (``tools=``, budgets, …) as ``run_stream`` would — or,
        on an async adapter, as ``astream_run`` would, awaited by the parent's run. Its
        events reach the parent's stream as ``SubRunEvent``\s under the call's id, its output
        is the call's result, and its usage is added to the parent's. Called deeper than
        ``max_depth`` sub-runs, it runs nothing and fails ``TQX_SUBRUN_TOO_DEEP``."""
        from runport.application._catalog import input_schema
        from runport.application._contract import resolve_contract
        from runport.application._subrun import subrun_function, tool_name

        loaded = resolve_contract(contract)
        return cls(
            name=name or tool_name(loaded.id),
            description=description if description is not None else loaded.description or "",
            parameters=input_schema(loaded),
            function=subrun_function(loaded, adapter, max_depth, options),
            needs_approval=needs_approval,
        )

    @staticmethod
    def output(value: Any) -> Any:
        """What a generator tool yields to give its result without showing it as progress:
        an async generator cannot return a value, and its last yield is otherwise both its
        last ``ToolProgress`` and its result (docs/runs.md, "Tool progress")."""
        return Output(value)

    def spec(self) -> ToolSpec:
        return ToolSpec(
            name=self.name, description=self.description, parameters=dict(self.parameters)
        )

    def check(self, arguments: Mapping[str, Any]) -> str | None:
        """Why the function's own signature refuses ``arguments`` (``None`` when it accepts)."""
        if self.arguments_model is None:
            return None
        try:
            self.arguments_model.model_validate(dict(arguments))
        except ValidationError as error:
            return "; ".join(
                f"{'/'.join(map(str, e['loc'])) or '(root)'}: {e['msg']}" for e in error.errors()
            )
        return None

    def asks_approval(self, arguments: Mapping[str, Any]) -> bool:
        """Whether this call (its arguments already checked) waits for a person's decision."""
        rule = self.needs_approval
        if isinstance(rule, bool):
            return rule
        return bool(rule(dict(arguments)))

    def call(self, arguments: Mapping[str, Any]) -> Any:
        """Call the function with arguments already checked against the offered schema."""
        if self.arguments_model is None:
            return self.function(**arguments)
        try:
            validated = self.arguments_model.model_validate(dict(arguments))
        except ValidationError as error:
            raise ToolArgumentsError(str(error)) from None
        return self.function(
            **{key: getattr(validated, key) for key in type(validated).model_fields}
        )


def _runs_on_the_client(**arguments: Any) -> Any:
    """A client tool's ``function``: the run holds its calls and never calls it; a direct
    ``Tool.call`` is refused rather than answered with something made up."""
    raise RuntimeError("a client tool is run by the caller: its result comes in tool_results=")


def as_tool(item: Tool | Callable[..., Any]) -> Tool:
    return item if isinstance(item, Tool) else Tool.from_function(item)


def tool_result_text(result: Any) -> str:
    """A tool's result as the model receives it: a string as-is, else compact sorted JSON."""
    if isinstance(result, str):
        return result
    return canonical_json(result).decode("utf-8")
