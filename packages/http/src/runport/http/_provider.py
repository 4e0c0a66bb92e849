"""A provider's setup, written once for every protocol: the keywords its adapters take, and
where its entry points read their settings (adr/0048-a-providers-setup-written-once.md)."""

from __future__ import annotations

import inspect
import logging
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from itertools import takewhile
from typing import Any, ClassVar, Required, TypeVar, Unpack

from runport.http._codec import Codec
from runport.http._settings import (
    ClientT,
    CodecCarrier,
    DriverOptions,
    checked_api_key,
    from_environment,
)
from runport.http._urls import redact_url

__all__ = ["ProviderAdapter", "ProviderEnvironment", "ProviderKeywords"]


class ProviderKeywords(DriverOptions[ClientT], total=False):
    """The keywords every provider adapter takes, besides its own: ``model`` (required),
    ``api_key``, ``base_url`` (required where the adapter has no ``default_base_url``) and
    the driver's (``http_client``, ``timeout``, ``max_response_bytes``, ``deadline``)."""

    model: Required[str]
    api_key: str | None
    base_url: str


class ProviderAdapter(CodecCarrier[ClientT]):
    """The keyword base of a provider's adapter pair: it checks the keywords every provider
    shares, builds the codec from the model and the key, and shows where the adapter posts
    and which model, never the key. A provider subclasses it once, generic over the client,
    with its own keywords, and binds it to each driver::

        class MessagesKeywords(ProviderAdapter[ClientT]):
            default_base_url = "https://api.example"

            def __init__(self, *, depth: int = 1, **keywords: Unpack[ProviderKeywords[ClientT]]):
                super().__init__(partial(MessagesCodec, depth=depth), **keywords)

        class MessagesAdapter(MessagesKeywords[httpx.Client], HTTPAdapter): ...
        class AsyncMessagesAdapter(MessagesKeywords[httpx.AsyncClient], AsyncHTTPAdapter): ...

    ``codec`` is called with ``model=`` and ``api_key=`` once both are checked (a model
    named, a key a header can carry).
    """

    default_base_url: ClassVar[str | None] = None
    """Where the adapter posts unless told otherwise; ``None``: ``base_url`` is required."""
    endpoint: ClassVar[str] = ""
    """The path the repr shows after ``base_url`` (``/chat/completions``); empty, none."""

    def __init__(
        self,
        codec: Callable[..., Codec],
        /,
        *,
        model: str,
        api_key: str | None = None,
        base_url: str | None = None,
        **options: Unpack[DriverOptions[ClientT]],
    ) -> None:
        if base_url is None:
            base_url = self.default_base_url
        if base_url is None:
            raise TypeError(f"{type(self).__name__} needs the keyword base_url")
        if not model:
            raise ValueError("model must name the upstream model")
        built = codec(model=model, api_key=checked_api_key(api_key))
        super().__init__(built, base_url=base_url, **options)
        self._show(base_url.rstrip("/") + self.endpoint if self.endpoint else base_url, model)


_A = TypeVar("_A", bound=ProviderAdapter[Any])


@dataclass(frozen=True, slots=True)
class ProviderEnvironment:
    """Where a provider's entry points read their settings: each argument, else its
    environment variable. ``adapter`` is the entry-point name (in messages and the log line);
    ``prefix`` names the model's and the base URL's variables (``RUNPORT_GEMINI``:
    ``RUNPORT_GEMINI_MODEL``, ``RUNPORT_GEMINI_BASE_URL``; the base URL falls back to the
    adapter's ``default_base_url``); ``api_key`` the key's variables, the first one set wins;
    ``example`` what a setting looks like, for the message naming what is missing. The key
    is required unless ``key_required`` is false (a local server needs none). ``options``
    maps further keywords to their variables, passed on only when set. ``base_url_also``
    names further variables the base URL is read from, after the prefix's own (the
    provider's own SDK's name for it, ``AZURE_OPENAI_ENDPOINT``).

    ``entry_point(kind)`` is the ``runport.adapters`` (or ``runport.async_adapters``)
    factory that builds ``kind`` from them and logs, at INFO on the provider's logger, where
    it goes and whether it has a key (never the key).
    """

    adapter: str
    prefix: str
    api_key: tuple[str, ...]
    example: str
    key_required: bool = True
    options: Mapping[str, str] = field(default_factory=dict)
    fixed: Mapping[str, Any] = field(default_factory=dict)
    """Keywords always passed as they are (``vertex=True`` for the ``vertex-gemini`` entry)."""
    adapter_base_url: bool = True
    """Whether the base URL falls back to the adapter's ``default_base_url``; ``False``: it is
    passed only when given or set, and the adapter picks its own from the other keywords (a
    Vertex AI location's host)."""
    base_url_also: tuple[str, ...] = ()

    @classmethod
    def vertex(
        cls, adapter: str, prefix: str, *, example: str, api_key: tuple[str, ...] = ()
    ) -> ProviderEnvironment:
        """A publisher's models on Vertex AI, read the same way for every publisher: no key
        required (google-auth's default credentials sign the requests; ``api_key`` names the
        variables of express mode's key, where the publisher has one), ``project`` and
        ``location`` from ``RUNPORT_VERTEX_PROJECT`` and ``RUNPORT_VERTEX_LOCATION``,
        ``vertex=True`` always passed, and the base URL passed only when given or set (the
        adapter picks the location's host)."""
        return cls(
            adapter,
            prefix,
            api_key=api_key,
            example=example,
            key_required=False,
            options={"project": "RUNPORT_VERTEX_PROJECT", "location": "RUNPORT_VERTEX_LOCATION"},
            fixed={"vertex": True},
            adapter_base_url=False,
        )

    @property
    def model(self) -> str:
        """The model's variable."""
        return f"{self.prefix}_MODEL"

    @property
    def base_url(self) -> str:
        """The base URL's variable."""
        return f"{self.prefix}_BASE_URL"

    def settings(self, kind: type[ProviderAdapter[Any]], **given: str | None) -> dict[str, Any]:
        """The keywords ``kind`` is built with: ``given`` (``base_url``, ``model``,
        ``api_key`` and the ``options``) each else from the environment. Every required
        one still missing is named at once."""
        required: list[tuple[str | None, *tuple[str, ...]]] = []
        if kind.default_base_url is None:
            variables: tuple[str, ...] = (self.base_url, *self.base_url_also)
            required.append((given.get("base_url"), *variables))
        if self.key_required:
            required.append((given.get("api_key"), *self.api_key))
        required.append((given.get("model"), self.model))
        found = iter(from_environment(self.adapter, self.example, *required))
        fallback = kind.default_base_url if self.adapter_base_url else None
        base_url = (
            next(found)
            if kind.default_base_url is None
            else _first(given.get("base_url"), (self.base_url, *self.base_url_also)) or fallback
        )
        api_key = next(found) if self.key_required else _first(given.get("api_key"), self.api_key)
        settings: dict[str, Any] = {**self.fixed, "model": next(found), "api_key": api_key}
        if base_url is not None:
            settings["base_url"] = base_url
        for keyword, variable in self.options.items():
            value = _first(given.get(keyword), (variable,))
            if value is not None:
                settings[keyword] = value
        logging.getLogger(_package(kind)).info(
            "%s adapter: %s, model %s, %s",
            self.adapter,
            "its default host" if base_url is None else redact_url(base_url),
            settings["model"],
            "with an API key" if api_key else "without an API key",
        )
        return settings

    def entry_point(self, kind: type[_A]) -> Callable[..., _A]:
        """The entry-point factory of ``kind``: keyword arguments ``base_url``, ``model``,
        ``api_key`` and the ``options``, each falling back to its environment variable."""
        names = ("base_url", "model", "api_key", *self.options)
        signature = inspect.Signature(
            [
                inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=None)
                for name in names
            ]
        )

        def create(**given: str | None) -> _A:
            signature.bind(**given)  # refuses an unknown keyword as a plain function would
            build: Callable[..., _A] = kind  # a provider's class, whose codec it makes itself
            return build(**self.settings(kind, **given))

        create.__signature__ = signature  # type: ignore[attr-defined]
        create.__name__ = create.__qualname__ = f"create_{self.adapter.replace('-', '_')}"
        create.__module__ = _package(kind)
        create.__doc__ = (
            f"The entry point ``{self.adapter}``: a ``{kind.__name__}`` whose settings each "
            f"fall back to the environment: {self._variables()}."
        )
        return create

    def _variables(self) -> str:
        named = [
            self.base_url,
            *self.base_url_also,
            self.model,
            *self.api_key,
            *self.options.values(),
        ]
        return ", ".join(f"``{name}``" for name in named)


def _first(given: str | None, variables: tuple[str, ...]) -> str | None:
    return given or next((os.environ[name] for name in variables if os.environ.get(name)), None)


def _package(kind: type) -> str:
    """The public package a class belongs to (``runport.openai`` for a class defined in
    ``runport.openai._responses._adapter``): its logger's name."""
    public = takewhile(lambda part: not part.startswith("_"), kind.__module__.split("."))
    return ".".join(public) or kind.__module__
