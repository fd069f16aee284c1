"""The labelled conversations of ``tests/data/simulated_users/`` and the detector's scores.

Shared by ``bench/bench_simulated_users.py`` (prints them) and
``tests/evals/test_simulator_faults.py`` (keeps them from falling).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from toolproof import Message
from toolproof.evals._simulator_faults import FAULT_KINDS, simulator_faults
from toolproof.evals._users import UserProfile

FOLDER = Path(__file__).resolve().parents[1] / "data" / "simulated_users"
#: Written with the rules / written after the rules were fixed, never used to tune them.
SETS = {"main": FOLDER / "conversations.yaml", "held_out": FOLDER / "held_out.yaml"}


@dataclass(frozen=True)
class Labelled:
    id: str
    label: str
    profile: UserProfile
    conversation: list[Message]
    ended_by: str


def load(name: str = "main") -> list[Labelled]:
    items = yaml.safe_load(SETS[name].read_text(encoding="utf-8"))
    out = []
    for item in items:
        user: dict[str, Any] = item["user"]
        profile = UserProfile(
            persona=user.get("persona"),
            instructions=user.get("instructions"),
            knows={str(k): str(v) for k, v in (user.get("knows") or {}).items()},
            reveal_when_asked=tuple(user.get("reveal_when_asked") or ()),
            situation=user.get("situation"),
        )
        conversation = [
            Message("user" if role == "user" else "assistant", text)
            for role, text in item["conversation"]
        ]
        out.append(Labelled(item["id"], item["label"], profile, conversation, item["ended_by"]))
    return out


@dataclass(frozen=True)
class Score:
    name: str
    true_positives: int
    flagged: int
    actual: int

    @property
    def precision(self) -> float:
        return self.true_positives / self.flagged if self.flagged else 1.0

    @property
    def recall(self) -> float:
        return self.true_positives / self.actual if self.actual else 1.0


def scores(name: str = "main") -> tuple[list[Score], dict[str, list[str]]]:
    """Precision and recall: any fault against faithful, then per kind; and the misses."""
    found: dict[str, set[str]] = {}
    labelled = load(name)
    for item in labelled:
        faults = simulator_faults(item.profile, item.conversation, ended_by=item.ended_by)
        found[item.id] = {fault.kind for fault in faults}
    out = []
    faulty = {i.id for i in labelled if i.label != "faithful"}
    flagged = {i.id for i in labelled if found[i.id]}
    out.append(Score("any fault", len(flagged & faulty), len(flagged), len(faulty)))
    for kind in FAULT_KINDS:
        actual = {i.id for i in labelled if i.label == kind}
        said = {i.id for i in labelled if kind in found[i.id]}
        out.append(Score(kind, len(said & actual), len(said), len(actual)))
    wrong = {
        "false alarms": sorted(
            f"{i.id}: {sorted(found[i.id])}"
            for i in labelled
            if i.label == "faithful" and found[i.id]
        ),
        "missed": sorted(
            f"{i.id}: found {sorted(found[i.id])}"
            for i in labelled
            if i.label != "faithful" and i.label not in found[i.id]
        ),
    }
    return out, wrong
