"""The Python examples of docs/replay.md run as written, in order, in a fresh folder."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "replay.md"


def test_the_guide_examples_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.DOTALL)
    assert len(blocks) >= 6
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("TOOLPROOF_REDACTION_SECRET", raising=False)
    namespace: dict[str, object] = {"__name__": "docs_replay"}
    for number, block in enumerate(blocks, 1):
        try:
            exec(compile(block, f"{DOC.name} python block {number}", "exec"), namespace)
        except Exception as exc:  # pragma: no cover - the message says which block broke
            raise AssertionError(f"{DOC.name} python block {number} failed: {exc!r}") from exc
    assert (tmp_path / ".toolproof" / "traces.db").exists()
