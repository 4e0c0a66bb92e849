// AG-UI's own client runs a runport AG-UI endpoint: HttpAgent posts the RunAgentInput,
// parses the event stream, strips and checks each event against @ag-ui/core's schemas
// (enforcement) and checks the sequence with its verifier (verifyEvents) before applying it.
// Any deviation the client reports — a warning from enforcement included — is an error here.
//
// node run-agui-agent.mjs REQUEST_JSON
//   REQUEST_JSON: {"url": URL, "threadId": …, "messages": [Message…], "headers"?: {…},
//                  "tools"?: [Tool…], "toolResults"?: {toolCallId: content}}
//   With "toolResults" the agent runs twice: after the first run the results join the
//   thread as tool messages (what a page's frontend tools give) and it runs again.
// Prints {"events": [...], "messages": [...], "state": …, "result": …, "errors": [...]}.
import { HttpAgent } from "@ag-ui/client";
import { EventSchema } from "@ag-ui/core/schemas";

const request = JSON.parse(process.argv[2]);
const errors = [];
const warn = console.warn;
console.warn = (...args) => {
  errors.push(`warning: ${args.map(String).join(" ")}`);
  warn(...args);
};
const events = [];
const agent = new HttpAgent({
  url: request.url,
  headers: request.headers ?? {},
  threadId: request.threadId,
  initialMessages: request.messages ?? [],
});
let result;
// one run, as the page starts it: the client's tools offered, the agent's state sent as kept
const run = (runId) =>
  agent.runAgent(
    {
      runId,
      ...(request.tools ? { tools: request.tools } : {}),
      ...(request.forwardedProps ? { forwardedProps: request.forwardedProps } : {}),
    },
    {
      onEvent({ event }) {
        const checked = EventSchema.safeParse(event);
        if (!checked.success) errors.push(`schema: ${event.type}: ${checked.error.message}`);
        events.push(event);
      },
      onRunFailed({ error }) {
        errors.push(`run failed: ${error?.message ?? error}`);
      },
    },
  );
try {
  const outcome = await run(request.runId);
  result = outcome.result;
  if (request.toolResults) {
    // the page ran its tools: their results join the thread as tool messages, and the agent
    // runs again with its state as the last run left it (HttpAgent sends it unasked)
    for (const [toolCallId, content] of Object.entries(request.toolResults)) {
      agent.addMessage({ id: `result-${toolCallId}`, role: "tool", toolCallId, content });
    }
    result = (await run(`${request.runId}-2`)).result;
  }
} catch (error) {
  errors.push(String(error?.message ?? error));
}
process.stdout.write(
  JSON.stringify({ events, messages: agent.messages, state: agent.state, result, errors }),
);
