// AG-UI's own client through a person in the loop: HttpAgent runs the agent, which ends with
// RUN_FINISHED whose outcome is an interrupt per call awaiting approval (held by the agent as
// pendingInterrupts); the answers go back as the next run's `resume`, built by the client's
// buildResumeArray, each entry echoing its interrupt's metadata (the sealed continuation).
// Schema or verifier complaints, warnings included, are errors here.
//
// node answer-agui-interrupts.mjs REQUEST_JSON
//   REQUEST_JSON: {"url": URL, "threadId": …, "messages": [Message…], "approved": bool,
//                  "reason"?: string}
// Prints {"interrupts": [...], "events": [...], "result": …, "errors": [...]}: the first run's
// interrupts, the second run's events and result.
import { HttpAgent, buildResumeArray } from "@ag-ui/client";
import { EventSchema } from "@ag-ui/core/schemas";

const request = JSON.parse(process.argv[2]);
const errors = [];
const warn = console.warn;
console.warn = (...args) => {
  errors.push(`warning: ${args.map(String).join(" ")}`);
  warn(...args);
};
const agent = new HttpAgent({
  url: request.url,
  threadId: request.threadId,
  initialMessages: request.messages,
});
const checked = (events) => ({
  onEvent({ event }) {
    const parsed = EventSchema.safeParse(event);
    if (!parsed.success) errors.push(`schema: ${event.type}: ${parsed.error.message}`);
    events.push(event);
  },
  onRunFailed({ error }) {
    errors.push(`run failed: ${error?.message ?? error}`);
  },
});
let interrupts = [];
const events = [];
let result;
try {
  await agent.runAgent({ runId: "run-1" }, checked([]));
  interrupts = agent.pendingInterrupts;
  const answers = Object.fromEntries(
    interrupts.map((interrupt) => [
      interrupt.id,
      {
        status: "resolved",
        payload: { approved: request.approved, ...(request.reason ? { reason: request.reason } : {}) },
        metadata: interrupt.metadata,
      },
    ]),
  );
  const outcome = await agent.runAgent(
    { runId: "run-2", resume: buildResumeArray(interrupts, answers) },
    checked(events),
  );
  result = outcome.result;
} catch (error) {
  errors.push(String(error?.message ?? error));
}
process.stdout.write(JSON.stringify({ interrupts, events, result, errors }));
