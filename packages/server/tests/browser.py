"""Debian's Chromium, driven by Playwright pointed at the installed executable (nothing
downloads a browser): what the playground's and the chat page's browser tests share."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from playwright.sync_api import BrowserContext, Page

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def chromium_path() -> str:
    found = os.environ.get("RUNPORT_CHROMIUM") or shutil.which("chromium")
    if found is None:
        pytest.fail("no chromium on PATH: install Debian's package (apt-get install -y chromium)")
    return found


@contextlib.contextmanager
def chromium_context() -> Iterator[BrowserContext]:
    """One headless Chromium with a fresh profile (``--user-data-dir``)."""
    from playwright.sync_api import sync_playwright

    with (
        tempfile.TemporaryDirectory(prefix="runport-chromium-") as profile,
        sync_playwright() as playwright,
    ):
        context = playwright.chromium.launch_persistent_context(
            profile, executable_path=chromium_path(), headless=True, args=CHROMIUM_ARGS
        )
        yield context
        context.close()


@contextlib.contextmanager
def opened_page(context: BrowserContext, width: int, height: int) -> Iterator[Page]:
    """A tab of ``width`` × ``height`` whose waits give up after 20 s."""
    page = context.new_page()
    page.set_viewport_size({"width": width, "height": height})
    page.set_default_timeout(20_000)
    try:
        yield page
    finally:
        page.close()
