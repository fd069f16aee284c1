"""Shared pieces of the server tests: a suite file for any external agent."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

AGENTS = Path(__file__).parent / "agents"


def suite_for(tmp_path: Path, agent: dict[str, object], *, trials: int = 1) -> Path:
    """A suite with one case that passes and one that fails, scripted answers."""
    path = tmp_path / "external.eval.yaml"
    path.write_text(
        textwrap.dedent(
            f"""\
            suite: external
            agent: {json.dumps(agent)}
            trials: {trials}
            cases:
              - name: apples
                input: "What do 3 apples cost?"
                script:
                  - [{{call: {{name: get_price, arguments: {{item: apple}}}}}},
                     {{call: {{name: multiply, arguments: {{a: 3, b: 1}}}}}}]
                  - {{call: {{name: multiply, arguments: {{a: 3, b: 2}}}}}}
                  - "3 apples cost 6 euros."
                expect:
                  calls:
                    - {{name: get_price, arguments: {{item: apple}}}}
                    - {{name: multiply, arguments: {{a: 3, b: 2}}}}
                  final_contains: "6 euros"
              - name: pears
                input: "What do 2 pears cost?"
                script:
                  - {{call: {{name: get_price, arguments: {{item: pear}}}}}}
                  - "2 pears cost 5 euros."
                expect:
                  tools_called: [get_price, multiply]
                  final_contains: "6 euros"
            """
        )
    )
    return path
