r"""The page shell of every HTML page toolproof writes: escaping, the inlined assets, formats.

A page is one file: the CSS and the script are inlined, nothing is fetched, and it works
from ``file://``. The report's data is embedded once as JSON (with ``<``, ``>`` and ``&``
written as ``\\u003c``... so nothing in it can close the script element), and the script
renders trace steps from it.

Escaping: every value from a report goes through :func:`e` (:func:`html.escape`, text and
attribute values alike); the script only ever sets DOM text, never markup. The renderers
of the eval report (``evals/_html.py``) and of the replay report (``replay/_html.py``)
build on this module and take plain data.
"""

from __future__ import annotations

import html
import json
import math
from functools import cache
from importlib import resources
from typing import Any

__all__ = [
    "DATA_END",
    "DATA_START",
    "badge",
    "chart_svg",
    "cost",
    "count",
    "e",
    "embed_json",
    "figure",
    "page",
    "page_end",
    "page_start",
    "pct",
    "render_trace_page",
    "secs",
    "tile",
]


def e(value: Any) -> str:
    """Escape any value for HTML text or a quoted attribute."""
    return html.escape("" if value is None else str(value), quote=True)


@cache
def _asset(name: str) -> str:
    return (resources.files("toolproof") / "_html_assets" / name).read_text(encoding="utf-8")


def embed_json(data: Any) -> str:
    """JSON safe inside ``<script type="application/json">``: no ``<``, ``>`` or ``&``."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), default=str)
    return (
        text.replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("&", "\\u0026")
        .replace("\u2028", "\\u2028")
        .replace("\u2029", "\\u2029")
    )


def page(title: str, body: str, *, data: Any = None, nav: str = "") -> str:
    """A complete HTML document with the inlined stylesheet and script.

    Args:
        title: The document title (escaped here).
        body: Markup for ``<main>`` (already escaped).
        data: Embedded as JSON for the script (``None``: no data block).
        nav: Markup of a navigation bar (the viewer's), shown above everything.
    """
    if data is None:
        return page_start(title, nav) + body + "\n</main>\n" + page_end()
    return page_start(title, nav) + body + DATA_START + embed_json(data) + DATA_END + page_end()


#: Between the body of a page and its embedded data, and after the data (see :func:`page`).
DATA_START = '\n</main>\n<script type="application/json" id="tp-data">'
DATA_END = "</script>\n"


def page_start(title: str, nav: str = "") -> str:
    """A page up to its body (see :func:`page`): streamed pages write the parts in turn."""
    return (
        "<!doctype html>\n"
        '<html lang="en"><head><meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        '<meta name="color-scheme" content="light dark">\n'
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        "style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:; "
        "form-action 'self'\">\n"
        f"<title>{e(title)}</title>\n<style>{_asset('app.css')}</style>\n</head>\n"
        f"<body>{nav}<main>\n"
    )


def page_end() -> str:
    """A page after its body and data (see :func:`page`)."""
    return f"<script>{_asset('app.js')}</script>\n</body></html>\n"


# -- formatting ---------------------------------------------------------------------------


def pct(value: float | None) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    return f"{value * 100:.1f}%"


def count(value: Any) -> str:
    return f"{int(value):,}" if isinstance(value, (int, float)) else "—"


def secs(seconds: Any) -> str:
    if not isinstance(seconds, (int, float)):
        return "—"
    if seconds < 0.01:  # (a mocked step takes well under a millisecond)
        return f"{seconds * 1000:.2g} ms"
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    if seconds < 120:
        return f"{seconds:.1f} s"
    return f"{seconds / 60:.1f} min"


def cost(value: Any) -> str:
    if not isinstance(value, (int, float)):
        return "—"
    return f"${value:.4f}" if value < 1 else f"${value:,.2f}"


def badge(kind: str, text: str | None = None) -> str:
    return f'<span class="badge b-{e(kind)}">{e(text or kind)}</span>'


def tile(label: str, value: str, note: str = "", kind: str = "") -> str:
    cls = f"tile t-{e(kind)}" if kind else "tile"
    extra = f'<div class="note">{note}</div>' if note else ""
    return (
        f'<div class="{cls}"><div class="label">{e(label)}</div>'
        f'<div class="value">{value}</div>{extra}</div>'
    )


def chart_svg(title: str, desc: str, width: int, height: int, inner: str) -> str:
    return (
        f'<svg class="chart" role="img" viewBox="0 0 {width} {height}" width="{width}" '
        f'height="{height}" aria-label="{e(title)}"><title>{e(title)}</title>'
        f"<desc>{e(desc)}</desc>{inner}</svg>"
    )


def figure(title: str, svg: str, caption: str = "") -> str:
    cap = f"<figcaption>{e(title)}{(' — ' + caption) if caption else ''}</figcaption>"
    return f'<figure class="fig">{cap}{svg}</figure>'


# -- single traces ------------------------------------------------------------------------


def render_trace_page(trace: dict[str, Any], *, nav: str = "") -> str:
    """A page with one trace's step view (the viewer's trace store pages)."""
    import shlex

    facts = [
        ("id", trace.get("id")),
        ("model", trace.get("model")),
        ("started", trace.get("started_at")),
        ("stop reason", trace.get("stop_reason")),
        ("tools", trace.get("tool_mode")),
        ("tags", ", ".join(str(t) for t in trace.get("tags") or []) or "—"),
        ("duration", secs((trace.get("duration_ms") or 0) / 1000)),
    ]
    body = (
        f'<header class="top"><h1>trace <code>{e(str(trace.get("id", ""))[:12])}</code></h1>'
        f'<p class="reason">{e(trace.get("input"))}</p></header>'
        f'<dl class="facts">{"".join(f"<dt>{e(k)}</dt><dd>{e(v)}</dd>" for k, v in facts)}</dl>'
        '<p class="muted">make it a regression case: <code>'
        f"toolproof traces promote {e(shlex.quote(str(trace.get('id', ''))))} -o FILE.eval.yaml "
        "--agent MODULE:FACTORY</code></p>"
        '<div class="trace-slot" data-trace="1"><noscript><p class="muted">The step view needs '
        "JavaScript.</p></noscript></div>"
    )
    return page(
        f"trace {trace.get('id', '')}", body, data={"kind": "trace", "trace": trace}, nav=nav
    )
