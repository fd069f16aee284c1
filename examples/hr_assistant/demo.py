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
    "12乘以8是多少",
    "查询员工E001的剩余年假",
    "查询员工E999的剩余年假",
    "你好，请介绍一下自己",
]


def offline_model(messages: list[Message], info: RequestInfo) -> object:
    """A rule-based stand-in for an LLM: picks a tool by keyword, then words the result."""
    last = messages[-1]
    if last.role == "tool":
        question = next(m.content or "" for m in reversed(messages) if m.role == "user")
        if last.status == "error":
            return f"查询失败：{last.content}。请核实员工编号。"
        if last.name == "multiply_numbers":
            a, b = re.findall(r"\d+(?:\.\d+)?", question)[:2]
            return f"{a}乘以{b}等于{float(last.content or 0):g}。"
        if last.name == "get_leave_balance":
            employee = re.search(r"[A-Za-z]\d+", question)
            return f"员工{employee.group(0) if employee else ''}的剩余年假为{last.content}天。"
        return f"结果：{last.content}"
    text = last.content or ""
    numbers = re.findall(r"\d+(?:\.\d+)?", text)
    if ("乘" in text or "times" in text) and len(numbers) >= 2:
        return call("multiply_numbers", a=float(numbers[0]), b=float(numbers[1]))
    employee = re.search(r"[A-Za-z]\d+", text)
    if employee and ("年假" in text or "leave" in text):
        return call("get_leave_balance", employee_id=employee.group(0))
    return "你好！我是 HR 助手，可以计算乘法、查询员工年假和天气。"


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
