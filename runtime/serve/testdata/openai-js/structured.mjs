// Uses the official OpenAI SDK's structured-output and tool-calling
// helpers, unchanged, against a ttis cpu unit serving a random-weight
// model: whatever the model writes, constrained decoding must make every
// answer parse and validate. Usage:
//   node structured.mjs http://127.0.0.1:PORT
// Prints one JSON line with the results; exits non-zero on any failure.
import OpenAI from "openai";
import { zodResponseFormat, zodFunction } from "openai/helpers/zod";
import { z } from "zod";

const base = process.argv[2];
if (!base) {
  console.error("usage: node structured.mjs BASE_URL");
  process.exit(2);
}
const client = new OpenAI({ baseURL: base + "/v1", apiKey: process.env.OPENAI_API_KEY || "unused", maxRetries: 0, timeout: 120000 });

function check(cond, msg) {
  if (!cond) {
    throw new Error(msg);
  }
}

const model = (await client.models.list()).data[0].id;
const ask = [{ role: "user", content: "What is the weather in Paris? Answer as JSON." }];

// 1. parse() with a Zod schema: the SDK validates the answer with Zod.
const Weather = z.object({
  city: z.string().max(12),
  temperature: z.number().min(-40).max(50),
  conditions: z.enum(["sunny", "cloudy", "rain"]),
  hourly: z.array(z.number().int().min(0).max(23)).max(3),
});
const weathers = [];
for (let seed = 0; seed < 3; seed++) {
  const c = await client.chat.completions.parse({
    model, messages: ask, response_format: zodResponseFormat(Weather, "weather"), max_tokens: 120, temperature: 1, seed,
  });
  const msg = c.choices[0].message;
  check(c.choices[0].finish_reason === "stop", "zod: finish_reason " + c.choices[0].finish_reason);
  check(msg.parsed && Weather.safeParse(msg.parsed).success, "zod: parsed " + JSON.stringify(msg.parsed) + " from " + msg.content);
  weathers.push(msg.parsed);
}

// 2. parse() with a JSON schema response format.
const js = await client.chat.completions.parse({
  model, messages: ask, max_tokens: 40, seed: 9,
  response_format: { type: "json_schema", json_schema: { name: "digit", strict: true, schema: { type: "object", properties: { n: { type: "integer", minimum: 1, maximum: 9 } }, required: ["n"], additionalProperties: false } } },
});
const digit = js.choices[0].message.parsed;
check(digit && Number.isInteger(digit.n) && digit.n >= 1 && digit.n <= 9, "json_schema: parsed " + JSON.stringify(digit));

// 3. The tool-calling flow with strict function tools the SDK parses.
const GetWeather = z.object({ city: z.string().max(10), days: z.number().int().min(1).max(7) });
const tools = [zodFunction({ name: "get_weather", parameters: GetWeather, description: "Weather forecast for a city" })];
const messages = [{ role: "user", content: "Weather in Paris for the next 3 days?" }];
const first = await client.chat.completions.parse({ model, messages, tools, tool_choice: "required", max_tokens: 80, temperature: 1, seed: 5 });
const choice = first.choices[0];
check(choice.finish_reason === "tool_calls", "required: finish_reason " + choice.finish_reason);
const call = choice.message.tool_calls[0];
check(call.type === "function" && call.function.name === "get_weather" && call.id, "required: call " + JSON.stringify(call));
check(GetWeather.safeParse(call.function.parsed_arguments).success, "required: arguments " + call.function.arguments);
messages.push(choice.message);
messages.push({ role: "tool", tool_call_id: call.id, content: JSON.stringify({ temperature: 21, conditions: "sunny" }) });
const second = await client.chat.completions.create({ model, messages, tools, max_tokens: 12 });
check(second.choices[0].message.role === "assistant", "answer after the tool result: " + JSON.stringify(second.choices[0]));

// 4. A named function, streamed: the SDK assembles the deltas.
const stream = client.chat.completions.stream({
  model, messages: [{ role: "user", content: "Weather in Rome?" }], tools, max_tokens: 80, seed: 6,
  tool_choice: { type: "function", function: { name: "get_weather" } },
});
const final = await stream.finalChatCompletion();
const streamed = final.choices[0].message.tool_calls[0];
check(streamed.function.name === "get_weather", "stream: call " + JSON.stringify(streamed));
check(GetWeather.safeParse(JSON.parse(streamed.function.arguments)).success, "stream: arguments " + streamed.function.arguments);

// 5. A tool choice naming an unknown function is a typed 400.
let status = 0;
try {
  await client.chat.completions.create({ model, messages: ask, tools, tool_choice: { type: "function", function: { name: "get_stock" } } });
} catch (e) {
  status = e.status;
}
check(status === 400, "unknown tool: status " + status);

console.log(JSON.stringify({ model, weathers, digit, call: call.function, streamed: streamed.function, after: second.choices[0].message.content }));
