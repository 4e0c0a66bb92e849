"""A chat page an app developer writes with the AI SDK (``useChat`` from ``@ai-sdk/react``
over its default transport, bundled here with esbuild from the committed lockfile) in
Debian's Chromium against a real ``runport serve``: reasoning, text and a tool's result
render; a second message carries the first as history; stop ends the run and the server
hangs up on its upstream. Run in the ``frontend`` tox env; skipped elsewhere, naming it."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from .frontend_node import ENABLED, FRONTEND, SKIP_REASON, node

if not ENABLED:
    pytest.skip(SKIP_REASON, allow_module_level=True)

from playwright.sync_api import BrowserContext, Page, Request, expect

from .browser import opened_page
from .frontend_runs import CHAT_SCENARIO
from .frontend_serve import PacedOpenAI, runport_serve, static_site

CONTRACTS = Path(__file__).parent / "contracts"
DOCS = Path(__file__).resolve().parents[3] / "docs"


@pytest.fixture(scope="module")
def page_site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The chat page bundled by esbuild from frontend/node_modules, served on its own origin."""
    node()  # Node and frontend/node_modules are there
    folder = tmp_path_factory.mktemp("chat-page")
    (folder / "index.html").write_bytes((FRONTEND / "chat-page" / "index.html").read_bytes())
    subprocess.run(
        [
            str(FRONTEND / "node_modules" / ".bin" / "esbuild"),
            "chat-page/main.jsx",
            "--bundle",
            "--format=esm",
            "--jsx=automatic",
            "--minify",
            '--define:process.env.NODE_ENV="production"',
            f"--outfile={folder / 'chat.js'}",
        ],
        cwd=FRONTEND,
        check=True,
        capture_output=True,
    )
    with static_site(folder) as url:
        yield url


@pytest.fixture
def page(chromium: BrowserContext) -> Iterator[Page]:
    with opened_page(chromium, 960, 560) as page:
        yield page


def send(page: Page, text: str) -> None:
    page.fill("#prompt", text)
    page.click("#send")


def test_use_chat_renders_reasoning_text_and_a_tool_result_then_a_second_message(
    page: Page, page_site: str
) -> None:
    with runport_serve(
        "--contracts",
        CONTRACTS,
        "--scenario",
        CHAT_SCENARIO,
        "--tools",
        "chat_tools:TOOLS",
        "--cors-origin",
        page_site,
    ) as server:
        chats: list[Request] = []
        page.on(
            "request", lambda request: chats.append(request) if request.method == "POST" else None
        )
        page.goto(f"{page_site}/?api={server}/v1/contracts/demo.forecast/chat")
        send(page, "Delft")
        answer = page.locator("li.message.assistant").nth(0)
        expect(answer.locator(".part.reasoning").nth(0)).to_have_text(
            "The city decides the coat; ask for the weather first."
        )
        expect(answer.locator(".part.text").nth(0)).to_have_text("Let me check the weather.")
        tool = answer.locator('.part.tool[data-name="get_weather"]')
        expect(tool).to_have_attribute("data-state", "output-available")
        expect(tool.locator(".result")).to_have_text('{"celsius":12.5,"city":"Delft","sky":"dry"}')
        expect(answer.locator(".part.text").nth(1)).to_have_text('{"coat": "light jacket"}')
        expect(answer.locator(".part.receipt")).to_have_count(2)
        expect(page.locator("#status")).to_have_text("ready")
        page.screenshot(path=str(DOCS / "frontends-use-chat.png"))

        send(page, "Oslo")
        expect(page.locator("li.message.assistant")).to_have_count(2)
        second = page.locator("li.message.assistant").nth(1)
        expect(second.locator(".part.receipt")).to_have_count(2)
        expect(page.locator("#status")).to_have_text("ready")
        expect(page.locator("#error")).to_have_count(0)
        body = json.loads(chats[-1].post_data or "{}")
        roles = [message["role"] for message in body["messages"]]
        assert roles == ["user", "assistant", "user"]
        carried = body["messages"][1]["parts"]
        sealed = next(part for part in carried if part["type"] == "reasoning")
        assert sealed["providerMetadata"]["runport"]["reasoning"][0]["provider_metadata"] == {
            "mock": {"signature": "sig-weather-1"}
        }


def test_stop_ends_the_run_the_server_hangs_up_upstream_and_the_chat_goes_on(
    page: Page, page_site: str
) -> None:
    upstream = PacedOpenAI()
    with (
        upstream.serve() as base_url,
        runport_serve(
            "--contracts",
            CONTRACTS,
            "--adapter",
            "openai",
            "--cors-origin",
            page_site,
            env={"RUNPORT_OPENAI_BASE_URL": base_url, "RUNPORT_OPENAI_MODEL": "paced"},
        ) as server,
    ):
        page.goto(f"{page_site}/?api={server}/v1/contracts/demo.story/chat")
        send(page, "a lighthouse")
        answer = page.locator("li.message.assistant").nth(0)
        expect(answer.locator(".part.reasoning")).to_have_text("A lighthouse story: ")
        expect(answer.locator(".part.text")).to_have_text("The keeper ")
        expect(page.locator("#status")).to_have_text("streaming")
        page.click("#stop")
        assert upstream.closed.wait(20), "the server did not hang up on its upstream"
        expect(page.locator("#status")).to_have_text("ready")
        expect(answer.locator(".part.text")).to_have_text("The keeper ")

        send(page, "a ship")
        second = page.locator("li.message.assistant").nth(1)
        expect(second.locator(".part.text")).to_have_text("The keeper waited.")
        sent = upstream.requests[-1]["messages"]
        assert [message["role"] for message in sent] == ["user", "assistant", "user"]
        assert sent[0]["content"] == "A short story about a lighthouse"
        assert sent[1]["content"] == "The keeper "  # what the stopped run had said
