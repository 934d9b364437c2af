// Streams a chat completion and a completion from a ttis unit with the
// official OpenAI SDK, unchanged, and checks what arrives. Usage:
//   node script.mjs http://127.0.0.1:PORT
// Prints one JSON line with the results; exits non-zero on any failure.
import OpenAI from "openai";

const base = process.argv[2];
if (!base) {
  console.error("usage: node script.mjs BASE_URL");
  process.exit(2);
}
const client = new OpenAI({ baseURL: base + "/v1", apiKey: process.env.OPENAI_API_KEY || "unused", maxRetries: 0, timeout: 30000 });

function check(cond, msg) {
  if (!cond) {
    throw new Error(msg);
  }
}

const models = await client.models.list();
const model = models.data[0].id;

// Chat, streamed, with usage.
let chatText = "";
let chatFinish = null;
let chatUsage = null;
let chatChunks = 0;
const chat = await client.chat.completions.create({
  model,
  messages: [{ role: "user", content: "Say something." }],
  max_tokens: 12,
  stream: true,
  stream_options: { include_usage: true },
  seed: 4,
});
for await (const chunk of chat) {
  chatChunks++;
  if (chunk.usage) {
    chatUsage = chunk.usage;
  }
  for (const c of chunk.choices) {
    chatText += c.delta?.content ?? "";
    if (c.finish_reason) {
      chatFinish = c.finish_reason;
    }
  }
}
check(chatText.length > 0, "chat: no text");
check(chatFinish === "stop" || chatFinish === "length", "chat: finish_reason " + chatFinish);
check(chatUsage && chatUsage.completion_tokens > 0 && chatUsage.total_tokens === chatUsage.prompt_tokens + chatUsage.completion_tokens, "chat: usage " + JSON.stringify(chatUsage));

// Completion, streamed, with a stop string.
let text = "";
let finish = null;
const stream = await client.completions.create({ model, prompt: "The sun", max_tokens: 10, stream: true, temperature: 0, stop: ["\n\n"] });
for await (const chunk of stream) {
  for (const c of chunk.choices) {
    text += c.text;
    if (c.finish_reason) {
      finish = c.finish_reason;
    }
  }
}
check(text.length > 0, "completion: no text");
check(finish === "length" || finish === "stop", "completion: finish_reason " + finish);

// Non-streaming chat through the SDK's response parsing.
const plain = await client.chat.completions.create({ model, messages: [{ role: "user", content: "hi" }], max_tokens: 4 });
check(plain.choices[0].message.role === "assistant", "chat: role " + plain.choices[0].message.role);

// An error comes back as the SDK's typed error.
let status = 0;
try {
  await client.completions.create({ model: "no-such-model", prompt: "x" });
} catch (e) {
  status = e.status;
}
check(status === 404, "unknown model: status " + status);

console.log(JSON.stringify({ model, chatText, chatFinish, chatUsage, chatChunks, text, finish }));
