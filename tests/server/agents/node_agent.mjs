// A two-tool agent written with the official openai npm package (Node 20).
import OpenAI from "openai";

const PRICES = { apple: 2, pear: 3 };
const TOOLS = [
  { type: "function", function: { name: "get_price", description: "The price of an item in euros.",
    parameters: { type: "object", properties: { item: { type: "string" } }, required: ["item"] } } },
  { type: "function", function: { name: "multiply", description: "a times b.",
    parameters: { type: "object", properties: { a: { type: "number" }, b: { type: "number" } },
      required: ["a", "b"] } } },
];

function runTool(name, args) {
  if (name === "get_price") return String(PRICES[args.item] ?? "unknown item");
  return String(args.a * args.b);
}

let input = "";
for await (const chunk of process.stdin) input += chunk;
const client = new OpenAI({ maxRetries: 0 }); // reads OPENAI_BASE_URL and OPENAI_API_KEY
const messages = [
  { role: "system", content: "You are a shop assistant." },
  { role: "user", content: input },
];
for (let step = 0; step < 8; step++) {
  const reply = await client.chat.completions.create({ model: "gpt-4o-mini", messages, tools: TOOLS });
  const message = reply.choices[0].message;
  messages.push(message);
  if (!message.tool_calls?.length) {
    console.log(message.content);
    process.exit(0);
  }
  for (const call of message.tool_calls) {
    const result = runTool(call.function.name, JSON.parse(call.function.arguments || "{}"));
    messages.push({ role: "tool", tool_call_id: call.id, content: result });
  }
}
process.exit(3);
