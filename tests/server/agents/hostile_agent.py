"""A command agent that misbehaves as its input says (for the process-safety tests).

Every behaviour answers through the model like a well-behaved agent unless it cannot:

- ``orphan``: starts a background child (stdout closed), then answers.
- ``holder``: starts a background child that keeps stdout open, then answers.
- ``hang``: starts a background child, then never answers (the run times out).
- ``flood``: prints forever.
- ``env``: writes its environment to ``$HOSTILE_DIR/env.json``, then answers.
- ``echo``: writes the input it got to ``$HOSTILE_DIR/input.bin``, then answers.

Children write their process id to ``$HOSTILE_DIR/children``, one a line.
"""

import json
import os
import subprocess
import sys
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.environ.get("HOSTILE_DIR", ".")


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


def answer(question: str) -> None:
    messages = [{"role": "user", "content": question}]
    for _ in range(8):
        message = complete(messages)
        messages.append(message)
        if not message.get("tool_calls"):
            print(message["content"], flush=True)
            return
        for call in message["tool_calls"]:
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": "2"})


def child(keep_stdout: bool) -> None:
    started = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(300)"],
        stdout=None if keep_stdout else subprocess.DEVNULL,
        stderr=None if keep_stdout else subprocess.DEVNULL,
        stdin=subprocess.DEVNULL,
    )
    with open(os.path.join(OUT, "children"), "a", encoding="utf-8") as out:
        out.write(f"{started.pid}\n")


def main() -> None:
    raw = sys.stdin.buffer.read() if len(sys.argv) < 2 else sys.argv[1].encode("utf-8")
    question = raw.decode("utf-8", errors="replace")
    if question.startswith("flood"):
        chunk = "x" * 65536
        while True:
            sys.stdout.write(chunk)
    if question.startswith("env"):
        with open(os.path.join(OUT, "env.json"), "w", encoding="utf-8") as out:
            json.dump(dict(os.environ), out)
    if question.startswith("echo"):
        with open(os.path.join(OUT, "input.bin"), "wb") as out:
            out.write(raw)
    if question.startswith(("orphan", "holder", "hang")):
        child(keep_stdout=question.startswith("holder"))
    if question.startswith("hang"):
        time.sleep(300)
    answer(question)


if __name__ == "__main__":
    main()
