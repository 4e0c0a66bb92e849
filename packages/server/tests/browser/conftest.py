"""A real headless Chromium (Debian's ``chromium`` package) driven by Playwright.

Nothing here downloads a browser: Playwright is pointed at the installed executable. These
tests run in their own tox env, ``browser``, which CI runs after installing chromium with apt.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator

import pytest

ENABLED = os.environ.get("RUNPORT_BROWSER_TESTS") == "1"
SKIP_REASON = (
    "the playground's browser tests run in their own tox env: `tox run -e browser` "
    "(needs Debian's chromium package; .ci/run installs it)"
)

if not ENABLED:
    pytest.skip(SKIP_REASON, allow_module_level=True)

from playwright.sync_api import BrowserContext, Page, sync_playwright  # noqa: E402

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


@pytest.fixture(scope="session")
def chromium() -> Iterator[BrowserContext]:
    """One Chromium for the session, with a fresh profile (``--user-data-dir``)."""
    with (
        tempfile.TemporaryDirectory(prefix="runport-chromium-") as profile,
        sync_playwright() as playwright,
    ):
        context = playwright.chromium.launch_persistent_context(
            profile, executable_path=chromium_path(), headless=True, args=CHROMIUM_ARGS
        )
        yield context
        context.close()


@pytest.fixture
def page(chromium: BrowserContext) -> Iterator[Page]:
    page = chromium.new_page()
    page.set_viewport_size({"width": 1200, "height": 860})
    page.set_default_timeout(20_000)
    yield page
    page.close()
