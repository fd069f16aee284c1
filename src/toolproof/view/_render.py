"""The entry point that renders any JSON report: an eval's or a replay's.

It sits above both renderers (``evals/_html.py``, ``replay/_html.py``), which share the page
shell of :mod:`toolproof._html`.
"""

from __future__ import annotations

from typing import Any

from toolproof.evals._html import render_eval
from toolproof.replay._html import render_replay

__all__ = ["render_report"]


def render_report(data: dict[str, Any], *, nav: str = "") -> str:
    """The HTML page of a JSON report (eval or replay), chosen by its fields."""
    if data.get("format") == "toolproof-eval-report" or "cases" in data:
        return render_eval(data, nav=nav)
    if "results" in data and "mode" in data:
        return render_replay(data, nav=nav)
    from toolproof.errors import ConfigError

    raise ConfigError(
        "not a toolproof report: expected the JSON of `toolproof run --report json` or "
        "`toolproof replay --report json`"
    )
