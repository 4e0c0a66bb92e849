// The AI SDK's own client reads a runport chat stream: DefaultChatTransport posts the chat
// (the body useChat sends), the `ai` package parses the response with its SSE reader and its
// chunk schema, and readUIMessageStream assembles the assistant UIMessage.
//
// node read-ui-message-stream.mjs REQUEST_JSON
//   REQUEST_JSON: {"api": URL, "chatId": …, "messages": [UIMessage…], "headers"?: {…},
//                  "continues"?: true}
//   With "continues" the last message is the assistant's (its approvals answered) and the
//   stream goes on with it, as useChat continues the message it sent back.
// Prints {"message": <the final UIMessage>, "snapshots": <how many>, "toolParts": [...],
// "errors": [...]} on stdout; "toolParts" is each snapshot's tool parts, where they changed
// (a preliminary output the part showed before its final one is kept there).
import { DefaultChatTransport, readUIMessageStream } from "ai";

const request = JSON.parse(process.argv[2]);
const transport = new DefaultChatTransport({ api: request.api, headers: request.headers ?? {} });
const errors = [];
let message;
let snapshots = 0;
const toolParts = [];
let lastTools;
try {
  const chunks = await transport.sendMessages({
    trigger: "submit-message",
    chatId: request.chatId,
    messageId: request.continues ? request.messages.at(-1).id : undefined,
    messages: request.messages,
    abortSignal: undefined,
  });
  for await (const snapshot of readUIMessageStream({
    ...(request.continues ? { message: request.messages.at(-1) } : {}),
    stream: chunks,
    onError: (error) => errors.push(String(error?.message ?? error)),
    terminateOnError: true,
  })) {
    message = snapshot;
    snapshots += 1;
    const tools = JSON.stringify(snapshot.parts.filter((part) => part.type.startsWith("tool-")));
    if (tools !== lastTools) toolParts.push(JSON.parse(tools));
    lastTools = tools;
  }
} catch (error) {
  errors.push(String(error?.message ?? error));
}
process.stdout.write(JSON.stringify({ message, snapshots, toolParts, errors }));
