"""A two-tool agent written with the official openai SDK: the loop a team writes by hand."""

import json
import sys

import openai

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_price",
            "description": "The price of an item in euros.",
            "parameters": {
                "type": "object",
                "properties": {"item": {"type": "string"}},
                "required": ["item"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "multiply",
            "description": "a times b.",
            "parameters": {
                "type": "object",
                "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
                "required": ["a", "b"],
            },
        },
    },
]
PRICES = {"apple": 2, "pear": 3}


def run_tool(name: str, arguments: dict) -> str:
    if name == "get_price":
        return str(PRICES.get(arguments["item"], "unknown item"))
    return str(arguments["a"] * arguments["b"])


def main() -> None:
    stream = "--stream" in sys.argv
    client = openai.OpenAI()  # reads OPENAI_BASE_URL and OPENAI_API_KEY
    messages = [
        {"role": "system", "content": "You are a shop assistant."},
        {"role": "user", "content": sys.stdin.read()},
    ]
    for _ in range(8):
        if stream:
            message = collect(
                client.chat.completions.create(
                    model="gpt-4o-mini",
                    messages=messages,
                    tools=TOOLS,
                    stream=True,
                    stream_options={"include_usage": True},
                )
            )
        else:
            reply = client.chat.completions.create(
                model="gpt-4o-mini", messages=messages, tools=TOOLS
            )
            message = reply.choices[0].message.model_dump(exclude_none=True)
        messages.append(message)
        if not message.get("tool_calls"):
            print(message.get("content") or "")
            return
        for call in message["tool_calls"]:
            arguments = json.loads(call["function"]["arguments"] or "{}")
            result = run_tool(call["function"]["name"], arguments)
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": result})
    sys.exit("too many steps")


def collect(chunks) -> dict:
    content, calls = "", {}
    for chunk in chunks:
        if not chunk.choices:
            continue
        delta = chunk.choices[0].delta
        content += delta.content or ""
        for piece in delta.tool_calls or []:
            slot = calls.setdefault(
                piece.index,
                {"id": "", "type": "function", "function": {"name": "", "arguments": ""}},
            )
            slot["id"] = piece.id or slot["id"]
            if piece.function:
                slot["function"]["name"] += piece.function.name or ""
                slot["function"]["arguments"] += piece.function.arguments or ""
    message = {"role": "assistant", "content": content or None}
    if calls:
        message["tool_calls"] = [calls[i] for i in sorted(calls)]
    return message


if __name__ == "__main__":
    main()
