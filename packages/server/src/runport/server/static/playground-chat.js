// The playground's chat mode: the contract as a chat on /v1/contracts/{id}/chat, read as the
// AI SDK's UI message stream. The conversation is kept as UI messages, the AI SDK's shape, and
// sent whole with each message, so the server rebuilds the history (sealed reasoning included).
// Everything the model wrote is inserted as text, never markup.
"use strict";

const chat = { contract: null, messages: [], run: null, count: 0 };

function chatMode(on) {
  $("mode-form").setAttribute("aria-selected", String(!on));
  $("mode-chat").setAttribute("aria-selected", String(on));
  show("inputs", !on);
  show("chat-panel", on);
  for (const id of ["run-panel", "receipt", "error"]) show(id, false);
  if (on && chat.contract !== state.contract) {
    if (chat.run) chat.run.abort();
    chat.contract = state.contract;
    chat.messages = [];
    $("chat-log").replaceChildren();
  }
  if (on) $("chat-input").focus();
}

function renderPart(part, answer) {
  if (part.type === "reasoning") return el("div", { class: "chat-part chat-reasoning", text: part.text });
  if (part.type === "text") return answer ? null : el("div", { class: "chat-part chat-text", text: part.text });
  if (part.type === "source-url") {
    return el("div", { class: "chat-part chat-source" }, sourceItem({ url: part.url, title: part.title }).firstChild);
  }
  if (part.type === "source-document") {
    return el("div", { class: "chat-part chat-source", text: part.title || part.filename || "a document" });
  }
  if (part.type === "file") {
    const found = /^data:([^;,]+);base64,(.*)$/s.exec(part.url || "");
    const image = found ? generatedImage(found[1], found[2], "an image the model generated") : null;
    return el("div", { class: "chat-part chat-file" }, image || el("span", { text: `a file (${part.mediaType})` }));
  }
  if (part.type.startsWith("tool-")) {
    const name = part.type.slice(5);
    const where = part.providerExecuted ? " · ran at the provider" : "";
    return el("div", { class: "chat-part chat-tool", "data-state": part.state, "data-name": name,
      "data-provider-executed": part.providerExecuted ? "true" : undefined },
      el("div", { class: "call", text: `${name}(${part.rawInput ?? JSON.stringify(part.input ?? {})})${where}` }),
      part.state === "output-available" ? el("div", { class: "result", text: JSON.stringify(part.output) }) : null,
      part.state === "output-error" ? el("div", { class: "failure", text: part.errorText }) : null);
  }
  if (part.type === "data-runport-output") {
    return el("div", { class: "chat-part chat-tree tree", "aria-label": "the structured answer" }, tree(part.data.value));
  }
  if (part.type === "data-runport-receipt") {
    const receipt = part.data;
    const valid = receipt.output_schema_valid === null ? "tool calls" : receipt.output_schema_valid ? "valid" : "invalid";
    return el("div", { class: "chat-part chat-receipt",
      text: `receipt · ${valid} · ${receipt.output_fingerprint.slice(0, 16)}…` });
  }
  return null;
}

function renderMessage(message, node) {
  const parts = [];
  const structured = message.parts.some((p) => p.type === "data-runport-output");
  let step = [];
  const flush = () => {
    // a step whose answer is a structured one shows it as a tree, not as its JSON text
    const answer = step.some((p) => p.type === "data-runport-output");
    parts.push(...step.map((p) => renderPart(p, answer)).filter(Boolean));
    step = [];
  };
  for (const part of message.parts) {
    if (part.type === "step-start") flush();
    else step.push(part);
  }
  flush();
  if (message.error) parts.push(el("div", { class: "chat-part chat-error", text: message.error }));
  node.classList.toggle("structured", structured);
  node.replaceChildren(...(message.role === "user" ? [message.parts[0].text] : parts));
}

// The UI message stream, applied to one assistant message as the AI SDK applies it.
function applyChunk(message, chunk, open) {
  const parts = message.parts;
  const tool = (id) => parts.find((p) => p.toolCallId === id);
  switch (chunk.type) {
    case "start-step": parts.push({ type: "step-start" }); break;
    case "text-start": open[chunk.id] = { type: "text", text: "" }; parts.push(open[chunk.id]); break;
    case "reasoning-start": open[chunk.id] = { type: "reasoning", text: "" }; parts.push(open[chunk.id]); break;
    case "text-delta": case "reasoning-delta": open[chunk.id].text += chunk.delta; break;
    case "reasoning-end": if (chunk.providerMetadata) open[chunk.id].providerMetadata = chunk.providerMetadata; break;
    case "tool-input-start":
      parts.push({ type: `tool-${chunk.toolName}`, toolCallId: chunk.toolCallId, state: "input-streaming", rawInput: "",
        ...(chunk.providerExecuted ? { providerExecuted: true } : {}) });
      break;
    case "tool-input-delta": tool(chunk.toolCallId).rawInput += chunk.inputTextDelta; break;
    case "tool-input-available": {
      let part = tool(chunk.toolCallId);
      if (!part) { part = { type: `tool-${chunk.toolName}`, toolCallId: chunk.toolCallId }; parts.push(part); }
      Object.assign(part, { state: "input-available", input: chunk.input });
      if (chunk.providerExecuted) part.providerExecuted = true;
      delete part.rawInput;
      break;
    }
    case "tool-input-error": Object.assign(tool(chunk.toolCallId), { state: "output-error", errorText: chunk.errorText }); break;
    case "tool-output-available": Object.assign(tool(chunk.toolCallId), { state: "output-available", output: chunk.output }); break;
    case "tool-output-error": Object.assign(tool(chunk.toolCallId), { state: "output-error", errorText: chunk.errorText }); break;
    case "source-url": parts.push({ type: "source-url", sourceId: chunk.sourceId, url: chunk.url, title: chunk.title }); break;
    case "source-document":
      parts.push({ type: "source-document", sourceId: chunk.sourceId, mediaType: chunk.mediaType, title: chunk.title, filename: chunk.filename });
      break;
    case "file": parts.push({ type: "file", mediaType: chunk.mediaType, url: chunk.url }); break;
    case "error": message.error = chunk.errorText; break;
    case "abort": message.error = "stopped"; break;
    default:
      if (chunk.type.startsWith("data-")) {
        const known = parts.find((p) => p.type === chunk.type && p.id === chunk.id);
        if (known) known.data = chunk.data;
        else parts.push({ type: chunk.type, id: chunk.id, data: chunk.data });
      }
  }
}

// A structured answer that streamed without snapshots still ends as a tree: its receipt's output.
function settle(message) {
  for (const receipt of message.parts.filter((p) => p.type === "data-runport-receipt")) {
    const output = receipt.data.output;
    const id = `output-${receipt.id.slice("receipt-".length)}`;
    const has = message.parts.some((p) => p.type === "data-runport-output" && p.id === id);
    if (!has && receipt.data.output_schema_valid === true && output !== null && typeof output === "object") {
      const at = message.parts.indexOf(receipt);
      message.parts.splice(at, 0, { type: "data-runport-output", id, data: { value: output, completed: [""], problems: [] } });
    }
  }
}

function setChatRunning(running, label) {
  $("chat-send").disabled = running;
  show("chat-stop", running);
  $("chat-status").textContent = label;
  $("chat-status").classList.toggle("live", running);
}

async function sendChat(event) {
  event.preventDefault();
  const text = $("chat-input").value.trim();
  if (!text || chat.run || !chat.contract) return;
  $("chat-input").value = "";
  chat.count += 1;
  const user = { id: `user-${chat.count}`, role: "user", parts: [{ type: "text", text }] };
  chat.messages.push(user);
  const userNode = el("li", { class: "chat-message user" });
  renderMessage(user, userNode);
  const answer = { id: `answer-${chat.count}`, role: "assistant", parts: [] };
  const answerNode = el("li", { class: "chat-message assistant" });
  $("chat-log").append(userNode, answerNode);
  const controller = new AbortController();
  chat.run = controller;
  setChatRunning(true, "streaming…");
  let drawn = false;
  const draw = () => { drawn = false; renderMessage(answer, answerNode); };
  try {
    const response = await fetch(`/v1/contracts/${encodeURIComponent(chat.contract.id)}/chat`, {
      method: "POST",
      headers: headers({ "Content-Type": "application/json" }),
      body: JSON.stringify({ id: `playground-${chat.contract.id}`, messages: chat.messages, trigger: "submit-message" }),
      signal: controller.signal,
    });
    if (!response.ok) {
      const body = await response.json().catch(() => null);
      answer.error = body && body.errorText ? body.errorText : `HTTP ${response.status}`;
      chat.messages.pop(); // a refused message is not part of the conversation
      setChatRunning(false, "refused");
      return;
    }
    const open = {};
    await readFrames(
      response,
      (name, data) => { if (data !== "[DONE]") applyChunk(answer, JSON.parse(data), open); },
      () => { if (!drawn) { drawn = true; requestAnimationFrame(draw); } },
    );
    settle(answer);
    setChatRunning(false, answer.error ? "failed" : "done");
  } catch (error) {
    if (!controller.signal.aborted) answer.error = `the connection broke: ${error}`;
    setChatRunning(false, controller.signal.aborted ? "stopped — the server stopped the run" : "");
  } finally {
    if (chat.messages[chat.messages.length - 1] === user) chat.messages.push(answer);
    draw();
    chat.run = null;
  }
}

$("mode-form").addEventListener("click", () => chatMode(false));
$("mode-chat").addEventListener("click", () => chatMode(true));
$("chat-form").addEventListener("submit", sendChat);
$("chat-input").addEventListener("keydown", (event) => {
  if (event.key === "Enter" && !event.shiftKey) sendChat(event);
});
$("chat-stop").addEventListener("click", () => { if (chat.run) chat.run.abort(); });
