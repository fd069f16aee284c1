"""A small agent: weather and a safe calculator, a step limit, and memory that trims.

Built by hand, such an agent is a loop with a config, a tool registry, memory and a step
limit (``MAX_ITERATIONS = 5``); with toolproof the same agent is a few lines, and its eval
set is a YAML suite (``toolchain.eval.yaml``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from toolproof import Agent, Memory, Tool, Toolset, calculator, tool
from toolproof.models import Model

WEATHER = {"北京": "晴，25 度", "上海": "小雨，22 度", "广州": "多云，28 度"}

SYSTEM_PROMPT = (
    "你是一个能够调用工具完成任务的中文智能体。当你需要获取额外信息时请根据工具说明调用工具；"
    "缺少必要参数时先向用户追问，不要猜测。任务完成后直接给出最终答案。"
)


@tool
def get_weather(city: str) -> dict[str, str]:
    """获取指定城市的当前天气信息，当用户询问天气时使用。

    Args:
        city: 城市名称，例如 北京。
    """
    return {"city": city, "weather": WEATHER.get(city, f"暂无 {city} 的天气数据")}


TOOLS: list[Tool[..., Any]] = [get_weather, calculator]


def build_agent(
    model: Model | str, tools: Toolset | Sequence[Tool[..., Any]] | None = None, **options: Any
) -> Agent:
    """Build the toolchain agent: at most 5 model calls per turn, history trimmed to fit.

    The memory budget is small on purpose, so the eval set's long conversation exercises
    trimming (a long conversation must trim its context without crashing).
    """
    options.setdefault("memory", Memory(max_tokens=250))
    return Agent(
        model,
        TOOLS if tools is None else tools,
        system_prompt=SYSTEM_PROMPT,
        max_steps=5,
        **options,
    )
