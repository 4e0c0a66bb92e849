// AG-UI's own client runs a runport AG-UI endpoint: HttpAgent posts the RunAgentInput,
// parses the event stream, strips and checks each event against @ag-ui/core's schemas
// (enforcement) and checks the sequence with its verifier (verifyEvents) before applying it.
// Any deviation the client reports — a warning from enforcement included — is an error here.
//
// node run-agui-agent.mjs REQUEST_JSON
//   REQUEST_JSON: {"url": URL, "threadId": …, "messages": [Message…], "headers"?: {…}}
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
try {
  const outcome = await agent.runAgent(
    { runId: request.runId, ...(request.forwardedProps ? { forwardedProps: request.forwardedProps } : {}) },
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
  result = outcome.result;
} catch (error) {
  errors.push(String(error?.message ?? error));
}
process.stdout.write(
  JSON.stringify({ events, messages: agent.messages, state: agent.state, result, errors }),
);
