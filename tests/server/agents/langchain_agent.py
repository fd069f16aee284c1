"""A two-tool agent written with LangChain's create_agent and ChatOpenAI."""

import sys

from langchain.agents import create_agent
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI

PRICES = {"apple": 2, "pear": 3}


@tool
def get_price(item: str) -> str:
    """The price of an item in euros."""
    return str(PRICES.get(item, "unknown item"))


@tool
def multiply(a: float, b: float) -> str:
    """a times b."""
    product = a * b
    return str(int(product) if product == int(product) else product)


def main() -> None:
    model = ChatOpenAI(model="gpt-4o-mini", max_retries=0)  # reads OPENAI_BASE_URL / _API_KEY
    agent = create_agent(model, [get_price, multiply], system_prompt="You are a shop assistant.")
    state = agent.invoke({"messages": [{"role": "user", "content": sys.stdin.read()}]})
    print(state["messages"][-1].content)


if __name__ == "__main__":
    main()
