"""A two-tool agent using only the standard library (quick to start: for the error tests).

Behaviours for the tests, chosen by the input: "crash" exits 1 with a message on stderr,
"silent" prints nothing, "offline" never calls the model, "sleep" hangs.
"""

import json
import os
import sys
import time
import urllib.request

PRICES = {"apple": 2, "pear": 3}
TOOLS = [
    {"type": "function", "function": {"name": "get_price", "parameters": {"type": "object"}}},
    {"type": "function", "function": {"name": "multiply", "parameters": {"type": "object"}}},
]


def complete(messages: list) -> dict:
    body = json.dumps({"model": "m", "messages": messages, "tools": TOOLS}).encode()
    request = urllib.request.Request(
        os.environ["OPENAI_BASE_URL"] + "/chat/completions",
        data=body,
        headers={
            "Content-Type": "application/json",
            "Authorization": "Bearer " + os.environ["OPENAI_API_KEY"],
        },
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.load(response)["choices"][0]["message"]


def main(question: str) -> None:
    if "crash" in question:
        sys.exit("Traceback: something broke in the agent")
    if "offline" in question:
        print("I answer without asking any model.")
        return
    if "sleep" in question:
        time.sleep(60)
    messages = [{"role": "user", "content": question}]
    for _ in range(8):
        message = complete(messages)
        messages.append(message)
        if not message.get("tool_calls"):
            if "silent" not in question:
                print(message["content"])
            return
        for call in message["tool_calls"]:
            arguments = json.loads(call["function"]["arguments"] or "{}")
            if call["function"]["name"] == "get_price":
                result = str(PRICES.get(arguments["item"], "unknown"))
            else:
                result = str(arguments["a"] * arguments["b"])
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": result})


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else sys.stdin.read())
