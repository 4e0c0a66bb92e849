// A chat page as an app developer writes one with the AI SDK: useChat over the default
// transport, pointed at `runport serve`'s chat route (?api=…), rendering every part kind a
// runport chat sends. The browser tier bundles it with esbuild from the lockfile.
import { useChat } from "@ai-sdk/react";
import { DefaultChatTransport } from "ai";
import { useState } from "react";
import { createRoot } from "react-dom/client";

const api = new URLSearchParams(window.location.search).get("api");
const transport = new DefaultChatTransport({ api });

function Part({ part }) {
  if (part.type === "reasoning") {
    return <div className="part reasoning" data-state={part.state}>{part.text}</div>;
  }
  if (part.type === "text") {
    return <div className="part text" data-state={part.state}>{part.text}</div>;
  }
  if (part.type.startsWith("tool-")) {
    return (
      <div className="part tool" data-name={part.type.slice(5)} data-state={part.state}>
        <span className="call">{`${part.type.slice(5)}(${JSON.stringify(part.input ?? null)})`}</span>
        {part.state === "output-available" ? (
          <span className="result">{JSON.stringify(part.output)}</span>
        ) : null}
        {part.state === "output-error" ? <span className="error">{part.errorText}</span> : null}
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
  const { messages, sendMessage, status, stop, error } = useChat({ transport });
  const [input, setInput] = useState("");
  return (
    <main>
      <ol id="messages">
        {messages.map((message) => (
          <li key={message.id} className={`message ${message.role}`}>
            {message.parts.map((part, index) => (
              <Part key={index} part={part} />
            ))}
          </li>
        ))}
      </ol>
      <p id="status">{status}</p>
      {error ? <p id="error">{error.message}</p> : null}
      <form
        onSubmit={(event) => {
          event.preventDefault();
          sendMessage({ text: input });
          setInput("");
        }}
      >
        <input id="prompt" value={input} onChange={(event) => setInput(event.target.value)} />
        <button id="send" type="submit" disabled={status !== "ready" && status !== "error"}>
          Send
        </button>
        <button id="stop" type="button" onClick={() => stop()}>
          Stop
        </button>
      </form>
    </main>
  );
}

createRoot(document.getElementById("root")).render(<Chat />);
