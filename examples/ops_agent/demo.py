"""A model upgrade, end to end: record, upgrade, replay fails the gate, schema diff says why.

Run it from the project root: ``python -m examples.ops_agent.demo``.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from examples.ops_agent.agent import build_agent
from examples.ops_agent.models import new_model, old_model, questions
from toolproof.cli import main as toolproof
from toolproof.replay import Recorder


def record(store: Path, model: Callable[[], Any], *, tags: list[str], count: int) -> None:
    """Run the deployed agent (v1 tools) on ``count`` questions, recording every run."""
    with Recorder(store, tags=tags) as recorder:
        agent = build_agent(model(), recorder=recorder)
        for question in questions(count):
            agent.run_sync(question)


def main() -> None:
    store = Path(tempfile.mkdtemp()) / "traces.db"
    print("1. production: the old model and the v1 tools; 40 runs are recorded")
    record(store, old_model, tags=["prod"], count=40)
    print("2. a canary: the new model on the v1 tools (query_users drops `options` silently)")
    record(store, new_model, tags=["canary"], count=12)
    toolproof(["traces", "list", "--store", str(store), "--limit", "4"])

    print("\n3. before shipping the new model with the v2 tools, replay production samples")
    code = toolproof(
        [
            "replay",
            "--store", str(store),
            "--tag", "prod",
            "--mode", "model",
            "--agent", "examples.ops_agent.agent:build_agent_v2",
            "--model", "examples.ops_agent.models:new_model",
            "--gate", "0.05",
        ]
    )  # fmt: skip
    print(f"-> toolproof replay exited {code}")

    print("\n4. why? the schema diff, counting recorded calls the v2 schema rejects")
    code = toolproof(
        [
            "schema", "diff", "examples.ops_agent.tools", "examples.ops_agent.tools_v2",
            "--store", str(store),
        ]
    )  # fmt: skip
    print(f"-> toolproof schema diff exited {code}")


if __name__ == "__main__":
    main()
