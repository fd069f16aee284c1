"""The Python example of docs/scale.md runs as written, against the test PostgreSQL server."""

from __future__ import annotations

import re
from pathlib import Path

DOC = Path(__file__).resolve().parents[2] / "docs" / "scale.md"
URL = "postgresql://toolproof@127.0.0.1:5432/traces"


def test_the_python_example_runs_on_a_real_server(pg_url: str) -> None:
    (block,) = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.S)
    assert URL in block
    exec(compile(block.replace(URL, pg_url), "docs/scale.md", "exec"), {"__name__": "docs"})


def test_the_guide_names_every_option_it_documents() -> None:
    text = DOC.read_text(encoding="utf-8")
    for name in ("TOOLPROOF_STORE", "--executor ray", "toolproof[postgres]", "toolproof[ray]"):
        assert name in text
