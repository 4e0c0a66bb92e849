// The runport playground: one page over the server's /v1 API, no build step, no dependencies.
"use strict";

const $ = (id) => document.getElementById(id);
const TOKEN_KEY = "runport.token";
const state = { token: sessionStorage.getItem(TOKEN_KEY) || "", contract: null, run: null, tree: false };

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = value;
    else if (value !== undefined && value !== null && value !== false) node.setAttribute(key, value);
  }
  for (const child of children) if (child) node.append(child);
  return node;
}

// A structured answer as a tree of its keys and values (the form and the chat mode both draw
// it with this): text, never markup.
function tree(value) {
  if (value === null || typeof value !== "object") {
    return el("span", { class: "leaf", text: JSON.stringify(value) });
  }
  const entries = Array.isArray(value) ? value.map((v, i) => [i, v]) : Object.entries(value);
  return el("ul", {}, ...entries.map(([key, child]) =>
    el("li", { "data-key": String(key) }, el("span", { class: "key", text: `${key}: ` }), tree(child))));
}

// What the provider did itself (adr/0055): a cited source is a link only when its URL is
// http(s) — never fetched by the page, opened only by a person's click, without the page as
// referrer — else its text; a generated image is shown inline only as a raster data URL (no
// SVG, which can carry script); every title, name and value the model gave is text.
const IMAGE_TYPES = new Set(["image/png", "image/jpeg", "image/gif", "image/webp"]);
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

function safeHref(url) {
  if (typeof url !== "string") return null;
  try {
    const parsed = new URL(url);
    return parsed.protocol === "https:" || parsed.protocol === "http:" ? parsed.href : null;
  } catch {
    return null;
  }
}

function sourceItem(source, citedText) {
  const label = source.title || source.url || source.filename || source.file_id
    || (source.document_index !== undefined ? `document ${source.document_index}` : "a source");
  const href = safeHref(source.url);
  const shown = href
    ? el("a", { href, target: "_blank", rel: "noopener noreferrer nofollow", referrerpolicy: "no-referrer", text: label })
    : el("span", { text: label });
  const quote = citedText ? el("q", { class: "cited", text: citedText }) : null;
  return el("li", { class: "source" }, shown, quote ? " " : null, quote);
}

function generatedImage(mediaType, data, alt) {
  if (!IMAGE_TYPES.has(mediaType) || typeof data !== "string" || !BASE64.test(data)) return null;
  return el("img", { src: `data:${mediaType};base64,${data}`, alt });
}

function fileItem(mediaType, data, partial) {
  const image = generatedImage(mediaType, data, partial ? "a preview of an image the model is generating" : "an image the model generated");
  const bytes = typeof data === "string" ? Math.floor(data.length * 3 / 4) : 0;
  return el("figure", { class: partial ? "generated partial" : "generated" },
    image, el("figcaption", { text: `${partial ? "preview · " : ""}${mediaType} · ${bytes} bytes` }));
}

function serverTool(data) {
  let card = document.querySelector(`#server-tools .server-tool[data-call-id="${CSS.escape(data.call_id)}"]`);
  if (!card) {
    card = el("div", { class: "server-tool", "data-call-id": data.call_id },
      el("div", { class: "head" }, el("span", { class: "name", text: data.name }), " ",
        el("span", { class: "where", text: `ran at the provider · ${data.call_id}` })),
      el("pre", { class: "input", text: JSON.stringify(data.input ?? null) }));
    $("server-tools").append(card);
    show("server-tools");
  }
  return card;
}

function onProvided(name, data) {
  if (name === "ServerToolCall") {
    serverTool(data);
  } else if (name === "ServerToolResult") {
    const card = serverTool(data);
    card.append(data.error
      ? el("div", { class: "failure", text: `failed: ${data.error}` })
      : el("pre", { class: "output", text: JSON.stringify(data.output ?? null) }));
  } else if (name === "Citation") {
    $("sources").append(sourceItem(data.source, data.cited_text));
    show("sources-panel");
  } else if (name === "FileDelta") {
    // a preview is replaced by the next preview, and by the whole file
    const files = $("files");
    const last = files.lastElementChild;
    if (last && last.classList.contains("partial")) last.remove();
    files.append(fileItem(data.media_type, data.data, data.partial));
    show("files");
  }
}

function show(id, visible = true) { $(id).classList.toggle("hidden", !visible); }

function headers(extra = {}) {
  return state.token ? { ...extra, Authorization: `Bearer ${state.token}` } : extra;
}

function setServer(up, text) {
  const box = $("server-state");
  box.replaceChildren(el("span", { class: up ? "dot" : "dot off" }), text);
}

// ---- errors ---------------------------------------------------------------------------------

function showError(code, title, message, diagnostics = []) {
  $("error-code").textContent = code;
  $("error-title").textContent = title;
  $("error-message").textContent = message || "";
  show("error-message", Boolean(message));
  $("error-diagnostics").replaceChildren(...diagnostics.map(diagnosticItem));
  show("error");
}

function clearError() { show("error", false); }

function diagnosticItem(d) {
  const item = el("li", { class: d.severity === "warning" ? "warning" : "" },
    el("span", { class: "code", text: d.code }), " ", d.message);
  if (d.json_pointer) item.append(el("span", { class: "where", text: `at ${d.json_pointer}` }));
  return item;
}

async function readProblem(response) {
  try {
    const body = await response.json();
    if (body && body.error) return body.error;
    return { code: `HTTP ${response.status}`, message: JSON.stringify(body) };
  } catch {
    return { code: `HTTP ${response.status}`, message: response.statusText || "unreadable reply" };
  }
}

// ---- token ----------------------------------------------------------------------------------

function askToken(message) {
  show("token-panel");
  show("token-error", Boolean(message));
  $("token-error").textContent = message || "";
  $("token").focus();
}

$("token-form").addEventListener("submit", (event) => {
  event.preventDefault();
  state.token = $("token").value.trim();
  sessionStorage.setItem(TOKEN_KEY, state.token);
  loadContracts();
});

// ---- contracts ------------------------------------------------------------------------------

async function loadContracts() {
  let response;
  try {
    response = await fetch("/v1/contracts", { headers: headers() });
  } catch (error) {
    setServer(false, "server unreachable");
    showError("network", "The server cannot be reached", String(error));
    return;
  }
  if (response.status === 401) {
    setServer(true, "needs a token");
    askToken(state.token ? "That token was not accepted." : "");
    return;
  }
  if (!response.ok) {
    const problem = await readProblem(response);
    showError(problem.code, "The contracts could not be listed", problem.message);
    return;
  }
  show("token-panel", false);
  clearError();
  const { contracts } = await response.json();
  setServer(true, `${contracts.length} contract${contracts.length === 1 ? "" : "s"}${state.token ? " · token set" : ""}`);
  show("no-contracts", contracts.length === 0);
  $("contracts").replaceChildren(...contracts.map((contract) => {
    const button = el("button", { type: "button", "data-id": contract.id },
      el("span", { class: "cid", text: contract.id }),
      el("span", { class: "cver", text: `v${contract.version}` }),
      contract.description ? el("span", { class: "cdesc", text: contract.description }) : null);
    button.addEventListener("click", () => select(contract));
    return el("li", {}, button);
  }));
  const wanted = decodeURIComponent(location.hash.slice(1));
  const first = contracts.find((c) => c.id === wanted) || (contracts.length === 1 ? contracts[0] : null);
  if (first) select(first);
}

function select(contract) {
  if (state.run) state.run.abort();
  state.contract = contract;
  history.replaceState(null, "", `#${encodeURIComponent(contract.id)}`);
  for (const button of document.querySelectorAll("#contracts button")) {
    button.setAttribute("aria-current", String(button.dataset.id === contract.id));
  }
  $("contract-title").textContent = contract.id;
  $("contract-version").textContent = `v${contract.version}`;
  $("contract-description").textContent = contract.description || "";
  $("fields").replaceChildren(...renderFields(contract.input_schema));
  for (const id of ["welcome", "run-panel", "receipt", "error"]) show(id, false);
  show("contract-panel");
  if (typeof chatMode === "function") chatMode(false); // playground-chat.js
  $("status").textContent = "";
  const firstField = $("fields").querySelector("input, select, textarea");
  if (firstField) firstField.focus();
}

// ---- the form -------------------------------------------------------------------------------

function kindOf(schema) {
  const part = schema["x-runport-part"];
  if (part === "image" || part === "file") return part;
  if (Array.isArray(schema.enum)) return "enum";
  const type = Array.isArray(schema.type) ? schema.type.find((t) => t !== "null") : schema.type;
  if (type === "string") return "string";
  if (type === "integer" || type === "number") return type;
  if (type === "boolean") return "boolean";
  return "json";
}

function renderFields(inputSchema) {
  const required = new Set(inputSchema.required || []);
  const properties = inputSchema.properties || {};
  const names = Object.keys(properties);
  if (names.length === 0) return [el("p", { class: "hint", text: "This contract takes no inputs." })];
  return names.map((name) => {
    const schema = properties[name];
    const kind = kindOf(schema);
    const id = `input-${name}`;
    let control;
    if (kind === "enum") {
      control = el("select", { id, name });
      control.append(el("option", { value: "", text: required.has(name) ? "choose…" : "(none)" }));
      for (const value of schema.enum) control.append(el("option", { value: JSON.stringify(value), text: String(value) }));
    } else if (kind === "string") {
      control = el("textarea", { id, name, rows: "2", placeholder: schema.default ?? "" });
    } else if (kind === "integer" || kind === "number") {
      control = el("input", { id, name, type: "number", step: kind === "integer" ? "1" : "any", min: schema.minimum, max: schema.maximum });
    } else if (kind === "image" || kind === "file") {
      control = el("input", { id, name, type: "file", accept: kind === "image" ? "image/*" : "" });
    } else if (kind === "boolean") {
      control = el("select", { id, name });
      control.append(el("option", { value: "", text: "(none)" }), el("option", { value: "true", text: "true" }), el("option", { value: "false", text: "false" }));
    } else {
      control = el("textarea", { id, name, rows: "3", class: "json", placeholder: "JSON" });
    }
    control.dataset.kind = kind;
    const typeName = kind === "enum" ? schema.enum.join(" | ") : kind === "json" ? "JSON" : kind;
    const label = el("label", { for: id }, name,
      required.has(name) ? el("span", { class: "req", text: "*", title: "required" }) : null,
      el("span", { class: "type", text: typeName }));
    return el("div", { class: "field", "data-name": name }, label, control,
      schema.description ? el("span", { class: "hint", text: schema.description }) : null,
      el("p", { class: "field-error hidden" }));
  });
}

// A chosen file as the part value the contract takes: its bytes in base64, its media type as
// the browser names it (the server checks both), and for a file its name.
function partValue(file, kind) {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => {
      const url = String(reader.result);
      const value = { data: url.slice(url.indexOf(",") + 1) };
      if (file.type) value.media_type = file.type;
      if (kind === "file") value.filename = file.name;
      resolve(value);
    };
    reader.onerror = () => reject(new Error(`cannot read ${file.name}`));
    reader.readAsDataURL(file);
  });
}

async function collect() {
  const inputs = {};
  let ok = true;
  for (const field of document.querySelectorAll("#fields .field")) {
    const name = field.dataset.name;
    const control = field.querySelector("input, select, textarea");
    const error = field.querySelector(".field-error");
    field.classList.remove("invalid");
    error.classList.add("hidden");
    const raw = control.value;
    if (raw === "") continue;  // left out: the server says whether it was required
    const kind = control.dataset.kind;
    try {
      if (kind === "image" || kind === "file") inputs[name] = await partValue(control.files[0], kind);
      else if (kind === "string") inputs[name] = raw;
      else if (kind === "integer" || kind === "number") {
        const number = Number(raw);
        if (!Number.isFinite(number)) throw new Error("not a number");
        inputs[name] = number;
      } else inputs[name] = JSON.parse(raw);
    } catch (problem) {
      ok = false;
      field.classList.add("invalid");
      error.textContent = kind === "json" ? `not valid JSON: ${problem.message}` : problem.message;
      error.classList.remove("hidden");
    }
  }
  return ok ? inputs : null;
}

function markFields(diagnostics) {
  for (const d of diagnostics) {
    const name = (d.json_pointer || "").match(/^\/inputs\/([^/]+)/);
    const field = name && document.querySelector(`#fields .field[data-name="${CSS.escape(name[1])}"]`);
    if (!field) continue;
    field.classList.add("invalid");
    const error = field.querySelector(".field-error");
    error.textContent = d.message;
    error.classList.remove("hidden");
  }
}

// ---- a run ----------------------------------------------------------------------------------

function setRunning(running, label) {
  $("run").disabled = running;
  show("stop", running);
  $("status").textContent = label;
  $("status").classList.toggle("live", running);
  $("output-text").classList.toggle("streaming", running);
}

function toolCall(index) {
  let card = document.querySelector(`#tool-calls .tool-call[data-index="${index}"]`);
  if (!card) {
    card = el("div", { class: "tool-call", "data-index": String(index) },
      el("div", { class: "head" }, el("span", { class: "name" }), " ", el("span", { class: "call-id" })),
      el("pre", { class: "arguments" }));
    $("tool-calls").append(card);
    show("tool-calls");
  }
  return card;
}

function onEvent(name, data) {
  if (name === "Delta") {
    // kept while a tree shows the answer, and shown only if the answer stops being JSON
    $("output-text").append(document.createTextNode(data.text));
  } else if (name === "OutputSnapshot") {
    // a structured answer is drawn once, as the tree its snapshots fill in, not as its text
    state.tree = true;
    show("output-text", false);
    $("output-tree").replaceChildren(tree(data.value));
    show("output-tree");
  } else if (name === "ReasoningDelta") {
    // Text, never markup: the model's reasoning is as untrusted as its answer.
    const reasoning = $("reasoning-text");
    reasoning.append(document.createTextNode(data.text));
    show("reasoning-text");
    reasoning.scrollTop = reasoning.scrollHeight;
  } else if (name === "ToolCallDelta") {
    const card = toolCall(data.index);
    card.querySelector(".name").textContent = `${data.name}(…)`;
    card.querySelector(".call-id").textContent = `call ${data.call_id}`;
    card.querySelector(".arguments").append(document.createTextNode(data.arguments_fragment));
  } else if (["ServerToolCall", "ServerToolResult", "Citation", "FileDelta"].includes(name)) {
    onProvided(name, data);
  } else if (name === "Complete") {
    setRunning(true, "complete — reading the receipt");
  } else if (name === "Failed") {
    showError(data.code, "The run failed", data.message);
  } else if (name === "envelope") {
    if (state.tree && data.result && typeof data.result.output === "string") {
      // the text stopped being JSON: the answer is its text after all
      state.tree = false;
      show("output-tree", false);
      show("output-text");
    }
    renderReceipt(data);
  }
}

function fact(term, value, mono = false) {
  return [el("dt", { text: term }), el("dd", { class: mono ? "mono" : "" }, value)];
}

function yesNo(value) {
  if (value === null || value === undefined) return el("span", { text: "not checked" });
  return el("span", { class: value ? "yes" : "no", text: value ? "valid" : "invalid" });
}

function renderReceipt(envelope) {
  const badge = $("receipt-badge");
  badge.textContent = envelope.ok ? "ok" : "not ok";
  badge.className = `badge ${envelope.ok ? "ok" : "bad"}`;
  const result = envelope.result;
  const facts = [];
  if (result) {
    facts.push(...fact("output schema", yesNo(result.output_schema_valid)));
    if (result.finish_reason) facts.push(...fact("finish reason", result.finish_reason));
    if (result.usage) {
      const reasoned = result.usage.reasoning_tokens ? ` (${result.usage.reasoning_tokens} reasoning)` : "";
      facts.push(...fact("tokens", `${result.usage.input_tokens} in · ${result.usage.output_tokens} out${reasoned}`));
    }
    const adapter = result.adapter;
    facts.push(...fact("adapter", `${adapter.id} ${adapter.version}${adapter.model ? ` · ${adapter.model}` : ""}`));
    if (typeof result.output !== "string" && !state.tree) {
      // a structured answer the run drew no tree of (the server sent no snapshots)
      facts.push(...fact("output", el("div", { class: "tree", "aria-label": "the structured answer" }, tree(result.output))));
    }
  }
  for (const [name, value] of Object.entries(envelope.fingerprints || {})) {
    facts.push(...fact(`${name} fingerprint`, value, true));
  }
  $("receipt-facts").replaceChildren(...facts);
  $("receipt-diagnostics").replaceChildren(...(envelope.diagnostics || []).map(diagnosticItem));
  $("receipt-json").textContent = JSON.stringify(envelope, null, 2);
  show("receipt");
}

function stoppedByUs() {
  setRunning(false, "stopped — the server was told to stop the run");
  $("output-text").classList.add("stopped");
  const badge = $("receipt-badge");
  badge.textContent = "stopped";
  badge.className = "badge stopped";
  $("receipt-facts").replaceChildren(...fact("outcome", "stopped before the end: a stopped run has no receipt"));
  $("receipt-diagnostics").replaceChildren();
  $("receipt-json").textContent = "";
  show("receipt");
}

// A streamed response's SSE frames, read as they arrive (the chat page reads its own with it):
// onFrame(name, data) for each frame with data lines (their text joined; "id:" lines and
// ": ping" heartbeats pass), afterRead() after each network read.
async function readFrames(response, onFrame, afterRead = () => {}) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true });
    let cut;
    while ((cut = buffer.indexOf("\n\n")) >= 0) {
      const frame = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      let name = "message";
      const data = [];
      for (const line of frame.split("\n")) {
        if (line.startsWith("event:")) name = line.slice(6).trim();
        else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
      }
      if (data.length) onFrame(name, data.join("\n"));
    }
    afterRead();
  }
}

function readEvents(response, signal) {
  return readFrames(response, (name, data) => {
    if (!signal.aborted) onEvent(name, JSON.parse(data));
  });
}

async function run(event) {
  event.preventDefault();
  const contract = state.contract;
  const inputs = await collect();
  if (!contract || inputs === null) return;
  clearError();
  show("receipt", false);
  $("reasoning-text").replaceChildren();
  show("reasoning-text", false);
  $("output-text").replaceChildren();
  $("output-text").classList.remove("stopped");
  show("output-text");
  $("output-tree").replaceChildren();
  show("output-tree", false);
  state.tree = false;
  $("tool-calls").replaceChildren();
  show("tool-calls", false);
  for (const [id, shown] of [["server-tools", "server-tools"], ["sources", "sources-panel"], ["files", "files"]]) {
    $(id).replaceChildren();
    show(shown, false);
  }
  show("run-panel");
  const controller = new AbortController();
  state.run = controller;
  setRunning(true, "running…");
  try {
    const response = await fetch(`/v1/contracts/${encodeURIComponent(contract.id)}/executions?partial_output=true`, {
      method: "POST",
      headers: headers({ "Content-Type": "application/json", Accept: "text/event-stream" }),
      body: JSON.stringify({ inputs }),
      signal: controller.signal,
    });
    if (response.status === 401) {
      setRunning(false, "");
      show("run-panel", false);
      askToken("The server asked for a token.");
      return;
    }
    const type = response.headers.get("content-type") || "";
    if (type.startsWith("text/event-stream")) {
      await readEvents(response, controller.signal);
      setRunning(false, "done");
      return;
    }
    const body = await response.json().catch(() => null);
    setRunning(false, "");
    show("run-panel", false);
    if (body && "ok" in body && response.status === 422) {
      showError("HTTP 422", "The inputs were not accepted", "", body.diagnostics || []);
      markFields(body.diagnostics || []);
    } else if (body && "ok" in body) {
      showError(`HTTP ${response.status}`, "The run did not succeed", "", body.diagnostics || []);
      renderReceipt(body);
    } else {
      const problem = body && body.error ? body.error : { code: `HTTP ${response.status}`, message: response.statusText };
      showError(problem.code, "The server refused the run", problem.message);
    }
  } catch (error) {
    if (controller.signal.aborted) stoppedByUs();
    else {
      setRunning(false, "");
      showError("network", "The connection broke during the run", String(error));
    }
  } finally {
    if (state.run === controller) state.run = null;
  }
}

$("inputs").addEventListener("submit", run);
$("stop").addEventListener("click", () => { if (state.run) state.run.abort(); });

loadContracts();
