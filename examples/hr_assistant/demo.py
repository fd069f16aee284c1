"""Run the HR assistant on a few questions and print its step log and trace summaries.

Without arguments it uses an offline rule-based model (no API key, no network). Pass a
model string to use a real one::

    python -m examples.hr_assistant.demo                           # offline
    python -m examples.hr_assistant.demo deepseek:deepseek-chat    # needs DEEPSEEK_API_KEY
"""

from __future__ import annotations

import re
import sys

from examples.hr_assistant.agent import build_agent
from toolproof import Message
from toolproof.events import StepPrinter
from toolproof.testing import FunctionModel, RequestInfo, call

QUESTIONS = [
    "What is 12 times 8?",
    "How many days of annual leave does employee E001 have left?",
    "How much annual leave does employee E999 have?",
    "Hello, what can you do?",
]


def offline_model(messages: list[Message], info: RequestInfo) -> object:
    """A rule-based stand-in for an LLM: picks a tool by keyword, then words the result."""
    last = messages[-1]
    if last.role == "tool":
        question = next(m.content or "" for m in reversed(messages) if m.role == "user")
        if last.status == "error":
            return f"The lookup failed: {last.content}. Please check the employee id."
        if last.name == "multiply_numbers":
            a, b = re.findall(r"\d+(?:\.\d+)?", question)[:2]
            return f"{a} times {b} is {float(last.content or 0):g}."
        if last.name == "get_leave_balance":
            employee = re.search(r"[A-Za-z]\d+", question)
            who = f"Employee {employee.group(0)}" if employee else "The employee"
            return f"{who} has {last.content} days of annual leave left."
        return f"Result: {last.content}"
    text = last.content or ""
    numbers = re.findall(r"\d+(?:\.\d+)?", text)
    if "times" in text and len(numbers) >= 2:
        return call("multiply_numbers", a=float(numbers[0]), b=float(numbers[1]))
    employee = re.search(r"[A-Za-z]\d+", text)
    if employee and "leave" in text:
        return call("get_leave_balance", employee_id=employee.group(0))
    return "Hello! I am the HR assistant: I can multiply numbers and look up annual leave."


def main(argv: list[str]) -> int:
    model = argv[0] if argv else FunctionModel(offline_model, name="offline-rules")
    agent = build_agent(model, on_event=StepPrinter())
    for question in QUESTIONS:
        print(f"\n>>> {question}")
        result = agent.run_sync(question)
        print(result.trace.summary())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
