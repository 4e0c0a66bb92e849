// The AI SDK's own chat sends files: a Chat (what useChat drives) with DefaultChatTransport
// calls sendMessage({text, files}) once a turn, so the SDK itself builds each user UIMessage
// (its file parts before its text, as it does from a FileList) and posts the whole
// conversation, then reads each answer with its stream reader and chunk schema.
//
// node send-chat-files.mjs REQUEST_JSON
//   REQUEST_JSON: {"api": URL, "chatId": …, "turns": [{"text": …, "files": [{"mediaType", "filename",
//   "base64"}]}]}
// Each file is given as a data URL, the string FileReader.readAsDataURL makes of a picked file
// (Node has no FileList). Prints {"messages": [UIMessage…], "status": …, "errors": [...]}.
import { Chat } from "@ai-sdk/react";
import { DefaultChatTransport } from "ai";

const request = JSON.parse(process.argv[2]);
const errors = [];
const chat = new Chat({
  id: request.chatId,
  transport: new DefaultChatTransport({ api: request.api }),
  onError: (error) => errors.push(String(error?.message ?? error)),
});
for (const turn of request.turns) {
  const files = (turn.files ?? []).map((file) => ({
    type: "file",
    mediaType: file.mediaType,
    filename: file.filename,
    url: `data:${file.mediaType};base64,${file.base64}`,
  }));
  await chat.sendMessage({ text: turn.text, files });
  if (chat.error) {
    errors.push(String(chat.error.message ?? chat.error));
    break;
  }
}
process.stdout.write(JSON.stringify({ messages: chat.messages, status: chat.status, errors }));
