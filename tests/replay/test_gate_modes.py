"""The replay gate reads the failure rate's interval: pass, fail, or undecided (exit 6 in release).

``toolproof replay`` on generated stores: ``passing`` samples whose recorded call fits the
rules and ``failing`` ones whose call breaks them, against several gates, modes, confidence
levels and interval methods; the verdict, the bound that decided it, the samples needed and the
exit code must be what ``toolproof._statistics.gate`` says for the counts.
"""

from __future__ import annotations

import json
import random
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from replay_helpers import user_trace

from toolproof._statistics import binomial_interval, gate
from toolproof._stats_text import show
from toolproof.cli import main
from toolproof.replay import TraceStore

EXIT = {"pass": 0, "fail": 1}


def designs() -> list[tuple[int, int, float, str, float, str]]:
    rng = random.Random(11)
    out = []
    for _ in range(14):
        samples = rng.choice([4, 12, 40])
        failing = rng.randint(0, samples)
        out.append(
            (
                samples,
                failing,
                rng.choice([0.05, 0.2, 0.5]),
                rng.choice(["advisory", "release"]),
                rng.choice([0.8, 0.95]),
                rng.choice(["wilson", "clopper-pearson"]),
            )
        )
    return out


@pytest.mark.timeout(120)
@pytest.mark.parametrize(("samples", "failing", "limit", "mode", "level", "method"), designs())
def test_the_gate_decides_from_the_interval(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    samples: int,
    failing: int,
    limit: float,
    mode: str,
    level: float,
    method: str,
) -> None:
    db = tmp_path / "traces.db"
    with TraceStore(db) as store:  # user 1 fits the rule below; user 2 does not
        store.add_many([user_trace(2 if i < failing else 1) for i in range(samples)])
    rules = tmp_path / "replay.yaml"
    rules.write_text("tools:\n  query_users:\n    bounds: {user_id: {max: 1}}\n")
    code = main(
        [
            "replay", "--store", str(db), "--tools", "replay_helpers:query_users",
            "--rules", str(rules), "--gate", str(limit), "--gate-mode", mode,
            "--confidence", str(level), "--interval", method, "--no-log",
            "--report", f"json:{tmp_path / 'r.json'}", "--report", f"markdown:{tmp_path / 'r.md'}",
            "--report", f"junit:{tmp_path / 'r.xml'}", "--report", f"html:{tmp_path / 'r.html'}",
        ]
    )  # fmt: skip
    out = capsys.readouterr().out
    data = json.loads((tmp_path / "r.json").read_text())
    want = gate(
        binomial_interval(failing, samples, level=level, method=method),  # type: ignore[arg-type]
        limit,
        mode=mode,  # type: ignore[arg-type]
    )
    got = data["gate"]
    assert (got["verdict"], got["bound"], got["needed"]) == (want.verdict, want.bound, want.needed)
    assert got["mode"] == mode and got["passed"] is not want.blocks
    assert (got["interval"]["low"], got["interval"]["high"]) == pytest.approx(
        (want.interval.low, want.interval.high)
    )
    assert got["interval"]["method"] == method and got["interval"]["level"] == level
    expected = EXIT.get(want.verdict, 6 if want.blocks else 0)
    assert code == data["exit_code"] == expected
    words = {"pass": "passed", "fail": "failed", "undecided": "undecided"}[want.verdict]
    assert f"gate ({mode}) {words}" in out
    assert f"gate ({mode}) {words}" in (tmp_path / "r.md").read_text()
    root = ET.parse(tmp_path / "r.xml").getroot()
    props = {p.get("name"): p.get("value") for p in root.iter("property")}
    assert props["failure_rate"] == show(want.interval)
    assert props["interval"] == f"{100 * level:g}% {method}"
    low, high = f"{100 * want.interval.low:.1f}%", f"{100 * want.interval.high:.1f}%"
    assert f"{level * 100:g}% {method} interval {low}–{high}" in (tmp_path / "r.html").read_text()
    if want.verdict == "undecided" and want.needed:
        assert f"about {want.needed} samples would decide" in out


@pytest.mark.parametrize(
    "flags", [["--gate-mode", "strict"], ["--confidence", "2"], ["--interval", "x"]]
)
def test_bad_gate_flags_exit_2(capsys: pytest.CaptureFixture[str], flags: list[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["replay", "--tools", "replay_helpers:query_users", *flags])
    assert exit_info.value.code == 2
    assert flags[0] in capsys.readouterr().err
