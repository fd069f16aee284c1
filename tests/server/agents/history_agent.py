"""A stdlib agent that keeps a conversation: it sends the earlier turns it is given.

The earlier turns come from the JSON file named by ``TOOLPROOF_HISTORY_FILE`` (a list of
``{role, content}``); without it, the agent knows only the current message.
"""

import json
import os
import sys
import urllib.request


def complete(messages: list) -> dict:
    body = json.dumps({"model": "m", "messages": messages}).encode()
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
    history = []
    name = os.environ.get("TOOLPROOF_HISTORY_FILE")
    if name:
        with open(name, encoding="utf-8") as file:
            history = json.load(file)
    message = complete([*history, {"role": "user", "content": question}])
    print(message["content"])


if __name__ == "__main__":
    main(sys.stdin.read())
