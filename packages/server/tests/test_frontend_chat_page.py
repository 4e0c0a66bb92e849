"""A chat page an app developer writes with the AI SDK (``useChat`` from ``@ai-sdk/react``
over its default transport, bundled here with esbuild from the committed lockfile) in
Debian's Chromium against a real ``runport serve``: reasoning, text and a tool's result
render; a second message carries the first as history; stop ends the run and the server
hangs up on its upstream. With ``runport serve --resumable`` the page resumes after a reload
(``useChat({resume: true})``): the run goes on once, and its answer shows once. Run in the
``frontend`` tox env; skipped elsewhere, naming it."""

from __future__ import annotations

import contextlib
import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from .frontend_node import ENABLED, FRONTEND, SKIP_REASON, node

if not ENABLED:
    pytest.skip(SKIP_REASON, allow_module_level=True)

from playwright.sync_api import BrowserContext, Page, Request, Response, expect

from .browser import opened_page
from .chat_tools import FILES_FOLDER
from .frontend_runs import CHAT_SCENARIO, SEARCH_SCENARIO
from .frontend_serve import DeletingOpenAI, PacedOpenAI, runport_serve, static_site

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


def test_use_chat_renders_sources_a_generated_image_and_a_provider_executed_web_search(
    page: Page, page_site: str
) -> None:
    with runport_serve(
        "--contracts", CONTRACTS, "--scenario", SEARCH_SCENARIO, "--cors-origin", page_site
    ) as server:
        chats: list[Request] = []
        page.on(
            "request", lambda request: chats.append(request) if request.method == "POST" else None
        )
        page.goto(f"{page_site}/?api={server}/v1/contracts/demo.story/chat")
        send(page, "Delft")
        answer = page.locator("li.message.assistant").nth(0)
        search = answer.locator('.part.tool[data-name="web_search"]')
        expect(search).to_have_attribute("data-provider-executed", "true")
        expect(search).to_have_attribute("data-state", "output-available")
        expect(search.locator(".call")).to_have_text('web_search({"query":"Delft lighthouse"})')
        expect(answer.locator(".part.text")).to_have_text(
            "Delft has no lighthouse; here is one drawn."
        )
        link = answer.locator("a.part.source")
        expect(link).to_have_count(1)  # the javascript: URL the model cited is no link
        expect(link).to_have_text("Delft harbour")
        expect(link).to_have_attribute("href", "https://example.org/delft")
        expect(link).to_have_attribute("rel", "noopener noreferrer nofollow")
        document = answer.locator("span.part.source.document")
        expect(document).to_have_text("Harbour <i>notes</i>")  # the model's markup, as text
        expect(answer.locator("i")).to_have_count(0)
        expect(page.locator('a[href^="javascript:"]')).to_have_count(0)
        image = answer.locator("img.part.file")
        expect(image).to_have_attribute("src", re.compile(r"^data:image/png;base64,iVBORw0KGgo"))
        # the browser decoded it: the whole 24x16 picture, not the 4x4 preview
        page.wait_for_function("document.querySelector('img.part.file')?.complete")
        assert image.evaluate("img => [img.naturalWidth, img.naturalHeight]") == [24, 16]
        expect(page.locator("#status")).to_have_text("ready")
        page.screenshot(path=str(DOCS / "frontends-provider-work.png"))

        send(page, "Oslo")  # the next request carries all of it back, and is taken
        second = page.locator("li.message.assistant").nth(1)
        expect(second.locator("img.part.file")).to_have_count(1)
        expect(page.locator("#status")).to_have_text("ready")
        expect(page.locator("#error")).to_have_count(0)
        carried = json.loads(chats[-1].post_data or "{}")["messages"][1]["parts"]
        kinds = {part["type"] for part in carried}
        assert {"tool-web_search", "source-url", "source-document", "file"} <= kinds
        (tool,) = [part for part in carried if part["type"] == "tool-web_search"]
        assert tool["providerExecuted"] is True


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


class ChatResponses:
    """How the server answered the page's requests: (method, status, run id, URL)."""

    def __init__(self, page: Page, server: str) -> None:
        self.server = server
        self.seen: list[tuple[str, int, str | None, str]] = []
        page.on("response", self._record)

    def _record(self, response: Response) -> None:
        if response.url.startswith(self.server) and response.request.method != "OPTIONS":
            run_id = response.headers.get("x-runport-run-id")
            self.seen.append((response.request.method, response.status, run_id, response.url))

    def of(self, method: str) -> list[tuple[int, str | None, str]]:
        return [(status, run_id, url) for verb, status, run_id, url in self.seen if verb == method]


@contextlib.contextmanager
def resumable_story(page_site: str) -> Iterator[tuple[PacedOpenAI, str]]:
    """``runport serve --resumable`` on the paced upstream (its first answer holds after
    "The keeper " until released)."""
    upstream = PacedOpenAI()
    with (
        upstream.serve() as base_url,
        runport_serve(
            "--contracts",
            CONTRACTS,
            "--adapter",
            "openai",
            "--resumable",
            "--cors-origin",
            page_site,
            env={"RUNPORT_OPENAI_BASE_URL": base_url, "RUNPORT_OPENAI_MODEL": "paced"},
        ) as server,
    ):
        yield upstream, server


def expect_one_whole_answer(page: Page) -> None:
    expect(page.locator("#status")).to_have_text("ready")
    expect(page.locator("li.message.user")).to_have_count(1)
    expect(page.locator("li.message.assistant")).to_have_count(1)
    answer = page.locator("li.message.assistant")
    expect(answer.locator(".part.reasoning")).to_have_text(["A lighthouse story: "])
    expect(answer.locator(".part.text")).to_have_text(["The keeper waited."])
    expect(page.locator("#error")).to_have_count(0)


def test_a_reload_mid_stream_resumes_the_run_and_shows_its_answer_once(
    page: Page, page_site: str
) -> None:
    with resumable_story(page_site) as (upstream, server):
        answers = ChatResponses(page, server)
        page.goto(f"{page_site}/?api={server}/v1/contracts/demo.story/chat")
        expect(page.locator("#status")).to_have_text("ready")
        assert answers.of("GET")[0][0] == 204  # useChat({resume: true}) asked: no run yet
        send(page, "a lighthouse")
        answer = page.locator("li.message.assistant")
        expect(answer.locator(".part.text")).to_have_text("The keeper ")
        expect(page.locator("#status")).to_have_text("streaming")
        assert "chat=" in page.url

        page.reload()
        expect(page.locator("#status")).to_have_text("streaming")  # resumed, not resent
        expect(answer).to_have_count(1)
        expect(answer.locator(".part.text")).to_have_text(["The keeper "])
        upstream.release()
        expect_one_whole_answer(page)

        assert len(upstream.requests) == 1  # the run ran once
        assert not upstream.closed.is_set()  # the reload did not stop it
        [(posted, run_id, _)] = answers.of("POST")
        assert posted == 200
        assert run_id
        resumed = answers.of("GET")[1]
        assert resumed[:2] == (200, run_id)  # the same run, replayed
        assert resumed[2].endswith("/stream?finished=true")  # it had not seen the run end

        page.reload()  # the run is over: the finished conversation, no second run
        expect(page.locator("#status")).to_have_text("ready")
        expect_one_whole_answer(page)
        status, resumed_id, url = answers.of("GET")[-1]
        assert (status, resumed_id) == (204, None)
        assert url.endswith("/stream")
        assert len(answers.of("POST")) == 1
        assert len(upstream.requests) == 1


def test_a_run_that_ended_while_the_page_was_away_is_shown_whole_when_it_comes_back(
    page: Page, page_site: str
) -> None:
    with resumable_story(page_site) as (upstream, server):
        answers = ChatResponses(page, server)
        page.goto(f"{page_site}/?api={server}/v1/contracts/demo.story/chat")
        send(page, "a lighthouse")
        expect(page.locator("li.message.assistant .part.text")).to_have_text("The keeper ")
        chat_url = page.url
        [(_, run_id, _)] = answers.of("POST")
        page.goto("about:blank")  # the tab leaves mid-stream
        upstream.release()
        with httpx.Client(base_url=server, timeout=30) as http:  # read to its end
            assert http.get(f"/v1/runs/{run_id}/events").text.rstrip().endswith("data: [DONE]")

        page.goto(chat_url)  # it saw no end, so it asks for the ended run too
        expect_one_whole_answer(page)
        status, resumed_id, url = answers.of("GET")[-1]
        assert (status, resumed_id) == (200, run_id)
        assert url.endswith("/stream?finished=true")
        assert len(upstream.requests) == 1


def test_stop_on_a_resumable_server_stops_the_run_not_only_the_stream(
    page: Page, page_site: str
) -> None:
    with resumable_story(page_site) as (upstream, server):
        answers = ChatResponses(page, server)
        page.goto(f"{page_site}/?api={server}/v1/contracts/demo.story/chat")
        send(page, "a lighthouse")
        answer = page.locator("li.message.assistant").nth(0)
        expect(answer.locator(".part.text")).to_have_text("The keeper ")
        # the page's DELETE is waited for as an event: the server may close the upstream
        # before the browser has read the 202
        with page.expect_response(
            lambda r: r.request.method == "DELETE" and r.url.startswith(server)
        ) as stopped:
            page.click("#stop")
        assert upstream.closed.wait(20), "the run went on after the stop"
        expect(page.locator("#status")).to_have_text("ready")
        [(_, run_id, _)] = answers.of("POST")
        assert (stopped.value.status, stopped.value.url.rsplit("/", 1)[-1]) == (202, run_id)
        assert len(answers.of("DELETE")) == 1

        send(page, "a ship")  # the chat is not busy: its run ended
        second = page.locator("li.message.assistant").nth(1)
        expect(second.locator(".part.text")).to_have_text("The keeper waited.")
        expect(page.locator("#error")).to_have_count(0)


@pytest.mark.parametrize("approve", [True, False], ids=["approve", "deny"])
def test_a_person_approves_or_denies_a_tool_call_in_the_page(
    page: Page, page_site: str, tmp_path: Path, approve: bool
) -> None:
    """The model asks to delete a file: the page shows Approve and Deny; Approve runs the tool
    (once) and the answer streams into the same message; Deny sends the denial, which the
    model reads, and the file stays."""
    (tmp_path / "notes.txt").write_text("keep?")
    upstream = DeletingOpenAI()
    with (
        upstream.serve() as base_url,
        runport_serve(
            "--contracts",
            CONTRACTS,
            "--adapter",
            "openai",
            "--tools",
            "chat_tools:APPROVAL_TOOLS",
            "--cors-origin",
            page_site,
            env={
                "RUNPORT_OPENAI_BASE_URL": base_url,
                "RUNPORT_OPENAI_MODEL": "deleting",
                FILES_FOLDER: str(tmp_path),
            },
        ) as server,
    ):
        page.goto(f"{page_site}/?api={server}/v1/contracts/demo.forecast/chat")
        send(page, "notes.txt")
        answer = page.locator("li.message.assistant").nth(0)
        tool = answer.locator('.part.tool[data-name="delete_file"]')
        expect(tool).to_have_attribute("data-state", "approval-requested")
        expect(page.locator("#status")).to_have_text("ready")
        assert len(upstream.requests) == 1
        assert (tmp_path / "notes.txt").exists()  # nothing runs before a person answers
        if approve:
            page.screenshot(path=str(DOCS / "frontends-approval.png"))
        tool.locator("button.approve" if approve else "button.deny").click()
        if approve:
            expect(tool).to_have_attribute("data-state", "output-available")
            expect(tool.locator(".result")).to_have_text('"deleted notes.txt"')
            told = "deleted notes.txt"
        else:
            expect(tool).to_have_attribute("data-state", "output-denied")
            told = "denied: tool 'delete_file' was not run: a person denied this call"
        expect(answer.locator(".part.text")).to_have_text(json.dumps({"coat": told}))
        expect(page.locator("li.message.assistant")).to_have_count(1)  # one message, gone on
        expect(page.locator("#status")).to_have_text("ready")
        expect(page.locator("#error")).to_have_count(0)
        assert upstream.requests[-1]["messages"][-1]["content"] == told
        assert (tmp_path / "notes.txt").exists() is not approve
        log = tmp_path / "deleted.log"  # the tool notes each time it ran
        assert (log.read_text() if log.exists() else "") == ("notes.txt\n" if approve else "")
