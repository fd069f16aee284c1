"""The entry point that renders any JSON report: an eval's (:mod:`._html`) or a replay's.

It sits above both renderers, which share the page shell of :mod:`._html`.
"""

from __future__ import annotations

from typing import Any

from toolproof.view._html import render_eval
from toolproof.view._html_replay import render_replay

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
