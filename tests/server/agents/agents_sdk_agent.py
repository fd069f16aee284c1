"""A two-tool agent written with the OpenAI Agents SDK over chat completions."""

import asyncio
import sys

from agents import Agent, OpenAIChatCompletionsModel, Runner, function_tool, set_tracing_disabled
from openai import AsyncOpenAI

PRICES = {"apple": 2, "pear": 3}


@function_tool
def get_price(item: str) -> str:
    """The price of an item in euros."""
    return str(PRICES.get(item, "unknown item"))


@function_tool
def multiply(a: float, b: float) -> str:
    """a times b."""
    product = a * b
    return str(int(product) if product == int(product) else product)


async def main() -> None:
    set_tracing_disabled(True)  # nothing leaves the machine
    model = OpenAIChatCompletionsModel(model="gpt-4o-mini", openai_client=AsyncOpenAI())
    agent = Agent(
        name="shop",
        instructions="You are a shop assistant.",
        model=model,
        tools=[get_price, multiply],
    )
    result = await Runner.run(agent, sys.stdin.read())
    print(result.final_output)


if __name__ == "__main__":
    asyncio.run(main())
