"""A two-tool agent written with pydantic-ai's OpenAI chat model."""

import sys

from pydantic_ai import Agent
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

PRICES = {"apple": 2, "pear": 3}

model = OpenAIChatModel("gpt-4o-mini", provider=OpenAIProvider())  # reads OPENAI_BASE_URL
agent = Agent(model, system_prompt="You are a shop assistant.")


@agent.tool_plain
def get_price(item: str) -> str:
    """The price of an item in euros."""
    return str(PRICES.get(item, "unknown item"))


@agent.tool_plain
def multiply(a: float, b: float) -> str:
    """a times b."""
    product = a * b
    return str(int(product) if product == int(product) else product)


if __name__ == "__main__":
    print(agent.run_sync(sys.stdin.read()).output)
