// A chat page as an app developer writes one with the AI SDK: useChat over the default
// transport, pointed at `runport serve`'s chat route (?api=…), rendering every part kind a
// runport chat sends — sources as links, generated images inline, and the provider's own
// tools (providerExecuted) beside the page's; React writes every model string as text. The browser tier bundles it with esbuild from the lockfile.
//
// It survives a reload: the chat id lives in the URL (?chat=…, made up on the first visit),
// the messages in sessionStorage, and useChat({ resume: true }) asks runport's resume route
// (GET {api}/{chat id}/stream) for the chat's run on load, which `runport serve --resumable`
// replays from its first frame (204 when the chat has none going on).
//
// A person in the loop: a tool part awaiting approval shows Approve and Deny, which answer it
// with addToolApprovalResponse; once every request of the message is answered, useChat sends
// the message back by itself (lastAssistantMessageIsCompleteWithApprovalResponses) and the
// server resumes the paused run from the continuation the message carries.
import { useChat } from "@ai-sdk/react";
import { DefaultChatTransport, lastAssistantMessageIsCompleteWithApprovalResponses } from "ai";
import { useEffect, useState } from "react";
import { createRoot } from "react-dom/client";

const params = new URLSearchParams(window.location.search);
const api = params.get("api");
if (!params.get("chat")) {
  params.set("chat", `chat-${crypto.randomUUID()}`);
  window.history.replaceState(null, "", `${window.location.pathname}?${params}`);
}
const chatId = params.get("chat");
const storageKey = `runport-chat:${chatId}`;
// What this tab last saw: the messages, and whether a run was still streaming into them
// (then its end was not seen, and the resume asks for the chat's run even if it finished
// meanwhile: ?finished=true).
const saved = JSON.parse(sessionStorage.getItem(storageKey) ?? '{"messages": [], "open": false}');

// Once the tab starts to leave, what it saw is saved as it was: the requests the browser cuts
// then must not read as the run's end.
let leaving = false;
window.addEventListener("beforeunload", () => {
  leaving = true;
});
window.addEventListener("pageshow", () => {
  leaving = false;
});

let resuming = null; // set while the resume request waits for its answer
let runId = null; // the run the chat streams from (x-runport-run-id), for the stop
const transport = new DefaultChatTransport({
  api,
  prepareReconnectToStreamRequest: ({ api: base, id }) => ({
    api: `${base}/${encodeURIComponent(id)}/stream${saved.open ? "?finished=true" : ""}`,
  }),
  fetch: async (url, init) => {
    const resume = init?.method === "GET";
    if (resume) {
      resuming?.(true);
    }
    try {
      const response = await fetch(url, init);
      runId = response.headers.get("x-runport-run-id") ?? runId;
      return response;
    } finally {
      if (resume) {
        resuming?.(false);
      }
    }
  },
});

// With `runport serve --resumable` a run outlives its connection, so stopping the stream
// alone would leave the run going (until the orphan timeout): the stop is the run's DELETE.
// (Without --resumable the aborted request is the stop, and the DELETE a harmless 404.)
function stopRun(stop) {
  stop();
  if (runId) {
    void fetch(new URL(`/v1/runs/${runId}`, api), { method: "DELETE" }).catch(() => {});
  }
}

function Part({ part, answer }) {
  if (part.type === "reasoning") {
    return <div className="part reasoning" data-state={part.state}>{part.text}</div>;
  }
  if (part.type === "text") {
    return <div className="part text" data-state={part.state}>{part.text}</div>;
  }
  if (part.type === "source-url") {
    // a model-supplied URL: a link the reader may follow, never fetched by the page
    return (
      <a className="part source" href={part.url} target="_blank" rel="noopener noreferrer nofollow">
        {part.title ?? part.url}
      </a>
    );
  }
  if (part.type === "source-document") {
    return <span className="part source document">{part.title}</span>;
  }
  if (part.type === "file") {
    return part.mediaType.startsWith("image/") ? (
      <img className="part file" src={part.url} alt="an image the model generated" />
    ) : (
      <a className="part file" href={part.url} download>
        {`a ${part.mediaType} file`}
      </a>
    );
  }
  if (part.type.startsWith("tool-")) {
    return (
      <div
        className="part tool"
        data-name={part.type.slice(5)}
        data-state={part.state}
        data-provider-executed={part.providerExecuted ? "true" : "false"}
      >
        <span className="call">{`${part.type.slice(5)}(${JSON.stringify(part.input ?? null)})`}</span>
        {part.state === "output-available" ? (
          <span className="result">{JSON.stringify(part.output)}</span>
        ) : null}
        {part.state === "output-error" ? <span className="error">{part.errorText}</span> : null}
        {part.state === "output-denied" ? <span className="denied">denied</span> : null}
        {part.state === "approval-requested" ? (
          <span className="approval">
            <button className="approve" type="button" onClick={() => answer(part, true)}>
              Approve
            </button>
            <button className="deny" type="button" onClick={() => answer(part, false)}>
              Deny
            </button>
          </span>
        ) : null}
      </div>
    );
  }
  if (part.type === "data-runport-receipt") {
    return (
      <div className="part receipt" data-finish={part.data.finish_reason ?? ""}>
        {`receipt ${part.data.output_fingerprint.slice(0, 12)}`}
      </div>
    );
  }
  if (part.type === "data-runport-output") {
    return <pre className="part output">{JSON.stringify(part.data.value)}</pre>;
  }
  return null;
}

function Chat() {
  const [isResuming, setResuming] = useState(true);
  resuming = setResuming;
  const { messages, sendMessage, status, stop, error, addToolApprovalResponse } = useChat({
    id: chatId,
    messages: saved.messages,
    resume: true,
    transport,
    sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses,
  });
  const answer = (part, approved) => addToolApprovalResponse({ id: part.approval.id, approved });
  const [input, setInput] = useState("");
  useEffect(() => {
    if (isResuming || leaving) {
      return; // what was saved stays until the resume has answered
    }
    const open = status === "submitted" || status === "streaming";
    sessionStorage.setItem(storageKey, JSON.stringify({ messages, open }));
  }, [messages, status, isResuming]);
  const busy = isResuming || (status !== "ready" && status !== "error");
  return (
    <main>
      <ol id="messages">
        {messages.map((message) => (
          <li key={message.id} className={`message ${message.role}`}>
            {message.parts.map((part, index) => (
              <Part key={index} part={part} answer={answer} />
            ))}
          </li>
        ))}
      </ol>
      <p id="status">{isResuming ? "resuming" : status}</p>
      {error ? <p id="error">{error.message}</p> : null}
      <form
        onSubmit={(event) => {
          event.preventDefault();
          sendMessage({ text: input });
          setInput("");
        }}
      >
        <input id="prompt" value={input} onChange={(event) => setInput(event.target.value)} />
        <button id="send" type="submit" disabled={busy}>
          Send
        </button>
        <button id="stop" type="button" onClick={() => stopRun(stop)}>
          Stop
        </button>
      </form>
    </main>
  );
}

createRoot(document.getElementById("root")).render(<Chat />);
