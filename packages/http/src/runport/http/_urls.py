"""Base URLs: where a codec's path goes, and how an adapter shows one without credentials."""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import quote

import httpx

from runport.core import is_secret_parameter

__all__ = ["redact_url", "request_url"]


def checked_base_url(base_url: str) -> httpx.URL:
    url = httpx.URL(base_url)
    if url.scheme not in ("http", "https") or not url.host:
        raise ValueError("base_url must be an http(s) URL, e.g. https://api.openai.com/v1")
    return url


def request_url(base: httpx.URL, path: str, params: Mapping[str, str]) -> httpx.URL:
    """``path`` appended to ``base``'s path; ``params`` join its query, which stays a query."""
    url = base.copy_with(path=base.path.rstrip("/") + "/" + path.lstrip("/"))
    return url.copy_merge_params(dict(params)) if params else url


def redact_url(url: httpx.URL | str) -> str:
    """``url`` without its user info, and with the value of every query parameter whose name
    suggests a credential replaced by ``***`` — fit for a repr or a log line."""
    url = httpx.URL(url)
    query = "&".join(
        f"{quote(name)}={'***' if is_secret_parameter(name) else quote(value)}"
        for name, value in url.params.multi_items()
    )
    clean = str(url.copy_with(username=None, password=None, query=None))
    return f"{clean}?{query}" if query else clean


def url_secrets(url: httpx.URL) -> tuple[str, ...]:
    """The credentials ``url`` carries — its password and the values of its credential query
    parameters — for the driver to remove from any provider text, echoed bare or not."""
    found = [url.password]
    found += [value for name, value in url.params.multi_items() if is_secret_parameter(name)]
    return tuple(value for value in found if value)
