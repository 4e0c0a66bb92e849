"""The playground as a person uses it, in a real headless Chromium against a live server.

Chromium is Debian's ``chromium`` package, driven by Playwright pointed at the installed
executable: nothing here downloads a browser. These tests run in their own tox env,
``browser``, which CI runs after installing chromium with apt; elsewhere they are skipped.
"""

from __future__ import annotations

import base64
import hashlib
import os
import re
import struct
import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from runport.application import async_adapter_factory
from runport.mock import AsyncEmitter, AsyncFunctionRuntime
from runport.server import create_app, serve_in_background

from .browser import opened_page
from .chat_tools import TOOLS
from .conftest import SCENARIO, PacedUpstream, Thinking, catalog
from .frontend_runs import CHAT_SCENARIO

DOCS = Path(__file__).resolve().parents[3] / "docs"
ENABLED = os.environ.get("RUNPORT_BROWSER_TESTS") == "1"
SKIP_REASON = (
    "the playground's browser tests run in their own tox env: `tox run -e browser` "
    "(needs Debian's chromium package; .ci/run installs it)"
)

if not ENABLED:
    pytest.skip(SKIP_REASON, allow_module_level=True)

from playwright.sync_api import BrowserContext, Page, expect  # noqa: E402


@pytest.fixture
def page(chromium: BrowserContext) -> Iterator[Page]:
    with opened_page(chromium, 1200, 860) as page:
        yield page


FINGERPRINT = re.compile(r"^[0-9a-f]{64}$")


@pytest.fixture
def paced_url(paced: PacedUpstream) -> Iterator[str]:
    with serve_in_background(create_app(catalog(), paced.adapter)) as url:
        yield url


def open_story(page: Page, url: str) -> None:
    page.goto(url)
    page.locator('#contracts button[data-id="demo.story"]').click()
    expect(page.locator("#contract-title")).to_have_text("demo.story")


def test_the_page_lists_the_contracts_and_renders_a_form_from_the_schema(
    page: Page, paced_url: str
) -> None:
    page.goto(paced_url)
    buttons = page.locator("#contracts button")
    expect(buttons).to_have_count(2)
    expect(buttons.nth(0)).to_contain_text("demo.forecast")
    expect(buttons.nth(1)).to_contain_text("Tell a very short story")
    buttons.nth(1).click()
    expect(page.locator("#contract-version")).to_have_text("v1.0.0")
    expect(page.locator("#input-topic")).to_be_visible()
    expect(page.locator('.field[data-name="topic"] .req')).to_have_count(1)
    options = page.locator("#input-mood option")
    expect(options).to_have_text(["(none)", "calm", "eerie", "cheerful"])
    expect(page.locator("#input-sentences")).to_have_attribute("type", "number")


def test_a_run_streams_text_as_it_arrives_then_shows_the_receipt(
    page: Page, paced: PacedUpstream, paced_url: str
) -> None:
    open_story(page, paced_url)
    page.fill("#input-topic", "a lighthouse")
    page.select_option("#input-mood", label="eerie")
    page.click("#run")
    output = page.locator("#output-text")
    paced.release(1)
    expect(output).to_have_text("Once ")
    expect(page.locator("#receipt")).to_be_hidden()
    paced.release(1)
    expect(output).to_have_text("Once upon ")
    expect(page.locator("#receipt")).to_be_hidden()
    paced.release_all()
    expect(output).to_have_text("Once upon a time.")
    receipt = page.locator("#receipt")
    expect(receipt).to_be_visible()
    expect(page.locator("#receipt-badge")).to_have_text("ok")
    expect(receipt).to_contain_text("valid")
    fingerprints = page.locator("#receipt-facts dd.mono")
    expect(fingerprints).to_have_count(2)
    for text in fingerprints.all_inner_texts():
        assert FINGERPRINT.match(text), text
    expect(page.locator("#status")).to_have_text("done")
    expect(page.locator("#stop")).to_be_hidden()


def test_stop_ends_the_run_midway_and_the_server_closes_the_upstream(
    page: Page, paced: PacedUpstream, paced_url: str
) -> None:
    open_story(page, paced_url)
    page.fill("#input-topic", "a lighthouse")
    page.click("#run")
    paced.release(1)
    expect(page.locator("#output-text")).to_have_text("Once ")
    page.click("#stop")
    assert paced.closed.wait(20), "the server did not stop the run when the page stopped"
    expect(page.locator("#receipt-badge")).to_have_text("stopped")
    expect(page.locator("#status")).to_contain_text("stopped")
    expect(page.locator("#output-text")).to_have_text("Once ")
    # the page and the server both go on: the next run completes
    paced.release(100)
    page.click("#run")
    expect(page.locator("#receipt-badge")).to_have_text("ok")


def test_a_bad_input_shows_the_servers_error_readably(page: Page, paced_url: str) -> None:
    open_story(page, paced_url)
    page.click("#run")
    error = page.locator("#error")
    expect(error).to_be_visible()
    expect(error).to_contain_text("The inputs were not accepted")
    expect(error.locator(".diagnostics .code")).to_have_text(["TQX_VALUE_REQUIRED"])
    expect(page.locator('.field[data-name="topic"]')).to_have_class(re.compile(r"\binvalid\b"))
    expect(page.locator('.field[data-name="topic"] .field-error')).to_contain_text("missing")
    expect(page.locator("#receipt")).to_be_hidden()
    page.fill("#input-topic", "ships")
    page.fill("#input-sentences", "9")
    page.click("#run")
    expect(error.locator(".diagnostics .code")).to_have_text(["TQX_VALUE_SCHEMA"])
    expect(error).to_contain_text("/sentences")
    expect(page.locator("#run-panel")).to_be_hidden()


def test_tool_calls_appear_under_their_call(page: Page) -> None:
    async def weather(request: object, emit: AsyncEmitter) -> None:
        await emit.tool_call_fragment(0, '{"city": ', call_id="c1", name="get_weather")
        await emit.tool_call_fragment(0, '"Delft"}')
        await emit.tool_call("get_time", {"zone": "CET"}, call_id="c2")
        await emit.finish("tool_calls")

    app = create_app(catalog(), lambda: AsyncFunctionRuntime(weather))
    with serve_in_background(app) as url:
        page.goto(url)
        page.locator('#contracts button[data-id="demo.forecast"]').click()
        page.fill("#input-city", "Delft")
        page.click("#run")
        calls = page.locator("#tool-calls .tool-call")
        expect(calls).to_have_count(2)
        expect(calls.nth(0).locator(".name")).to_have_text("get_weather(…)")
        expect(calls.nth(0).locator(".call-id")).to_have_text("call c1")
        expect(calls.nth(0).locator(".arguments")).to_have_text('{"city": "Delft"}')
        expect(calls.nth(1).locator(".name")).to_have_text("get_time(…)")
        expect(page.locator("#receipt-diagnostics")).to_contain_text("TQX_TOOL_CALLS_PENDING")


def test_a_structured_answer_is_drawn_once_as_a_tree_that_fills_in(page: Page) -> None:
    paced = PacedUpstream(['{"coat": "li', "ght jac", 'ket", "layers": [1', ", 2]}"])
    app = create_app(catalog(), paced.adapter)
    with serve_in_background(app) as url:
        page.goto(url)
        page.locator('#contracts button[data-id="demo.forecast"]').click()
        page.fill("#input-city", "Delft")
        page.click("#run")
        answer = page.locator("#output-tree")
        coat = answer.locator('li[data-key="coat"] .leaf')
        paced.release(1)
        expect(coat).to_have_text('"li"')  # the open string, cut where the text is
        paced.release(1)
        expect(coat).to_have_text('"light jac"')
        expect(page.locator("#receipt")).to_be_hidden()
        paced.release(1)
        expect(coat).to_have_text('"light jacket"')
        expect(answer.locator('li[data-key="layers"] li')).to_have_count(0)  # 1 is not delimited
        paced.release_all()
        expect(answer.locator('li[data-key="layers"] .leaf')).to_have_text(["1", "2"])
        expect(page.locator("#receipt-badge")).to_have_text("ok")
        # drawn once: the JSON text is not shown beside the tree, nor repeated in the receipt
        expect(page.locator("#output-text")).to_be_hidden()
        expect(page.locator(".tree")).to_have_count(1)
        assert '"coat"' not in page.inner_text("body")  # what is rendered: only the tree's key


def test_a_structured_answer_that_stops_being_json_is_shown_as_its_text(page: Page) -> None:
    paced = PacedUpstream(['{"coat": "wool"', " and a scarf"])
    app = create_app(catalog(), paced.adapter)
    with serve_in_background(app) as url:
        page.goto(url)
        page.locator('#contracts button[data-id="demo.forecast"]').click()
        page.fill("#input-city", "Delft")
        page.click("#run")
        paced.release(1)
        expect(page.locator('#output-tree li[data-key="coat"] .leaf')).to_have_text('"wool"')
        paced.release_all()
        expect(page.locator("#receipt-badge")).to_have_text("not ok")
        expect(page.locator("#output-tree")).to_be_hidden()
        expect(page.locator("#output-text")).to_have_text('{"coat": "wool" and a scarf')


def test_reasoning_is_shown_dimmed_above_the_answer_as_text_never_markup(page: Page) -> None:
    thinking = ["Ships <b>never</b> ", '<img src=x onerror="window.pwned=1">came.']
    answer = ["The keeper ", "waited."]
    app = create_app(catalog(), lambda: Thinking(thinking, answer))
    with serve_in_background(app) as url:
        open_story(page, url)
        page.fill("#input-topic", "ships")
        page.click("#run")
        expect(page.locator("#receipt")).to_be_visible()
        reasoning = page.locator("#reasoning-text")
        output = page.locator("#output-text")
        expect(reasoning).to_be_visible()
        expect(reasoning).to_have_text("".join(thinking))
        expect(output).to_have_text("".join(answer))  # never mixed into the answer
        expect(reasoning.locator("b, img")).to_have_count(0)  # inserted as text
        assert page.evaluate("window.pwned") is None
        above = reasoning.bounding_box()
        below = output.bounding_box()
        assert above is not None
        assert below is not None
        assert above["y"] + above["height"] <= below["y"]
        assert reasoning.evaluate("node => getComputedStyle(node).fontStyle") == "italic"
        dim = reasoning.evaluate("node => getComputedStyle(node).color")
        assert dim != output.evaluate("node => getComputedStyle(node).color")
        expect(page.locator("#receipt-facts")).to_contain_text("(8 reasoning)")


def test_a_run_without_reasoning_shows_no_reasoning_region(page: Page, paced_url: str) -> None:
    open_story(page, paced_url)
    page.fill("#input-topic", "a lighthouse")
    page.click("#run")
    expect(page.locator("#output-text")).to_have_text("")
    expect(page.locator("#reasoning-text")).to_be_hidden()


def test_the_page_asks_for_the_token_when_the_server_needs_one(page: Page) -> None:
    app = create_app(
        catalog(), async_adapter_factory("mock", scenario=SCENARIO), token="open-sesame"
    )
    with serve_in_background(app) as url:
        page.goto(url)
        expect(page.locator("#token-panel")).to_be_visible()
        expect(page.locator("#contracts button")).to_have_count(0)
        page.fill("#token", "wrong")
        page.click("#token-form button")
        expect(page.locator("#token-error")).to_have_text("That token was not accepted.")
        page.fill("#token", "open-sesame")
        page.click("#token-form button")
        expect(page.locator("#token-panel")).to_be_hidden()
        page.locator('#contracts button[data-id="demo.story"]').click()
        page.fill("#input-topic", "ships")
        page.click("#run")
        expect(page.locator("#output-text")).to_have_text(
            "The lighthouse keeper counted ships that never came."
        )
        expect(page.locator("#receipt-badge")).to_have_text("ok")


def test_chat_mode_shows_reasoning_tools_with_results_and_the_answer_as_a_tree(
    page: Page,
) -> None:
    scenario = async_adapter_factory("mock", scenario=CHAT_SCENARIO)
    with serve_in_background(create_app(catalog(), scenario, tools=TOOLS)) as url:
        page.goto(url)
        page.locator('#contracts button[data-id="demo.forecast"]').click()
        page.click("#mode-chat")
        expect(page.locator("#inputs")).to_be_hidden()
        page.fill("#chat-input", "Delft")
        page.click("#chat-send")
        answer = page.locator(".chat-message.assistant").nth(0)
        expect(answer.locator(".chat-reasoning").nth(0)).to_have_text(
            "The city decides the coat; ask for the weather first."
        )
        expect(answer.locator(".chat-text").nth(0)).to_have_text("Let me check the weather.")
        tool = answer.locator('.chat-tool[data-name="get_weather"]')
        expect(tool).to_have_attribute("data-state", "output-available")
        expect(tool.locator(".call")).to_have_text('get_weather({"city":"Delft"})')
        expect(tool.locator(".result")).to_have_text('{"celsius":12.5,"city":"Delft","sky":"dry"}')
        leaf = answer.locator('.chat-tree li[data-key="coat"] .leaf')
        expect(leaf).to_have_text('"light jacket"')
        expect(answer.locator(".chat-text")).to_have_count(1)  # the JSON answer is the tree
        expect(answer.locator(".chat-receipt")).to_have_count(2)
        expect(page.locator("#chat-status")).to_have_text("done")
        page.screenshot(path=str(DOCS / "playground-chat.png"))
        # the second message goes with the first as its history, sealed reasoning and all
        page.fill("#chat-input", "Oslo")
        page.click("#chat-send")
        second = page.locator(".chat-message.assistant").nth(1)
        expect(second.locator(".chat-receipt")).to_have_count(2)
        expect(second.locator(".chat-error")).to_have_count(0)
        expect(page.locator("#chat-status")).to_have_text("done")


def test_chat_mode_stop_ends_the_run_and_the_server_closes_the_upstream(
    page: Page, paced: PacedUpstream, paced_url: str
) -> None:
    open_story(page, paced_url)
    page.click("#mode-chat")
    page.fill("#chat-input", "a lighthouse")
    page.click("#chat-send")
    paced.release(1)
    expect(page.locator(".chat-message.assistant .chat-text")).to_have_text("Once ")
    page.click("#chat-stop")
    assert paced.closed.wait(20), "the server did not stop the run when the page stopped"
    expect(page.locator("#chat-status")).to_contain_text("stopped")


def test_an_image_input_is_a_file_picker_whose_file_is_sent(page: Page) -> None:
    from .test_parts import DESCRIBE, PNG, describe

    app = create_app([DESCRIBE], lambda: AsyncFunctionRuntime(describe))
    with serve_in_background(app) as url:
        page.goto(url)
        page.locator('#contracts button[data-id="demo.describe"]').click()
        picker = page.locator("#input-photo")
        expect(picker).to_have_attribute("type", "file")
        expect(picker).to_have_attribute("accept", "image/*")
        picker.set_input_files({"name": "cat.png", "mimeType": "image/png", "buffer": PNG})
        page.click("#run")
        expect(page.locator("#receipt")).to_be_visible()
        digest = hashlib.sha256(PNG).hexdigest()
        expect(page.locator("#output-text")).to_have_text(f"image/png {digest}")


def _png_chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


PNG_BYTES = (  # one red pixel, a real PNG the browser decodes
    b"\x89PNG\r\n\x1a\n"
    + _png_chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0))
    + _png_chunk(b"IDAT", zlib.compress(b"\x00\xff\x00\x00"))
    + _png_chunk(b"IEND", b"")
)
SCRIPTED_TITLE = "<script>window.pwned=1</script>Rivers <b>run</b>"


def test_sources_are_links_as_text_and_generated_images_inline(page: Page) -> None:
    async def searcher(request: object, emit: AsyncEmitter) -> None:
        await emit.server_tool_call("web_search", {"query": "<i>rivers</i>"}, call_id="srv_1")
        await emit.server_tool_result("srv_1", [{"url": "https://example.org/rivers"}])
        await emit.text("Rivers run downhill.")
        await emit.citation("https://example.org/rivers", title=SCRIPTED_TITLE, start=0, end=6)
        await emit.citation("javascript:window.pwned=2", title="not a link", start=7, end=10)
        await emit.file("image/png", PNG_BYTES, partial=True)
        await emit.file("image/png", PNG_BYTES)

    app = create_app(catalog(), lambda: AsyncFunctionRuntime(searcher))
    with serve_in_background(app) as url:
        open_story(page, url)
        page.fill("#input-topic", "rivers")
        page.click("#run")
        expect(page.locator("#receipt")).to_be_visible()
        sources = page.locator("#sources li")
        expect(sources).to_have_count(2)
        link = sources.nth(0).locator("a")
        expect(link).to_have_text(SCRIPTED_TITLE)  # the title as text, the markup inert
        expect(link).to_have_attribute("href", "https://example.org/rivers")
        expect(link).to_have_attribute("rel", "noopener noreferrer nofollow")
        expect(page.locator("#sources-panel script, #sources-panel b")).to_have_count(0)
        expect(sources.nth(1).locator("a")).to_have_count(0)  # a javascript: URL is no link
        expect(sources.nth(1)).to_have_text("not a link")
        images = page.locator("#files img")
        expect(images).to_have_count(1)  # the preview was replaced by the whole image
        src = images.nth(0).get_attribute("src")
        assert src == "data:image/png;base64," + base64.b64encode(PNG_BYTES).decode()
        expect(images.nth(0)).to_have_js_property("complete", True)
        assert images.nth(0).evaluate("img => img.naturalWidth") == 1  # shown, not refused
        tool = page.locator("#server-tools .server-tool")
        expect(tool.locator(".name")).to_have_text("web_search")
        expect(tool.locator(".input")).to_have_text('{"query":"<i>rivers</i>"}')
        expect(tool.locator("i")).to_have_count(0)
        expect(tool.locator(".output")).to_contain_text("https://example.org/rivers")
        assert page.evaluate("window.pwned") is None
