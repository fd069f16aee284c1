"""Replay reports as HTML: counts, the gate, findings and side-by-side diffs of both runs.

It builds on the page shell of :mod:`toolproof._html`; the same escaping rules hold: every
value goes through :func:`toolproof._html.e`.
"""

from __future__ import annotations

import difflib
import json
from typing import Any

from toolproof._html import badge, chart_svg, count, e, figure, page, pct, secs, tile

__all__ = ["calls_diff", "render_replay", "word_diff"]


def _calls(trace: dict[str, Any] | None) -> list[dict[str, Any]]:
    if not trace:
        return []
    out: list[dict[str, Any]] = []
    for step in trace.get("steps") or []:
        out.extend((step.get("response") or {}).get("tool_calls") or [])
    return out


def _args_text(args: Any) -> str:
    return json.dumps(args, ensure_ascii=False, sort_keys=True, default=str)


def _shown(value: Any) -> str:
    """A whole value as text: a text as written, not as the JSON string that holds it."""
    return value if isinstance(value, str) else _args_text(value)


def calls_diff(
    recorded: list[dict[str, Any]], new: list[dict[str, Any]]
) -> list[tuple[str, Any, Any]]:
    """Pair recorded and new calls: ``("same"|"changed"|"removed"|"added", rec, new)``."""
    names_a = [str(c.get("name")) for c in recorded]
    names_b = [str(c.get("name")) for c in new]
    out: list[tuple[str, Any, Any]] = []
    matcher = difflib.SequenceMatcher(a=names_a, b=names_b, autojunk=False)
    for op, a1, a2, b1, b2 in matcher.get_opcodes():
        if op == "equal":
            for a, b in zip(recorded[a1:a2], new[b1:b2], strict=True):
                same = _args_text(a.get("arguments")) == _args_text(b.get("arguments"))
                out.append(("same" if same else "changed", a, b))
        else:
            out.extend(("removed", a, None) for a in recorded[a1:a2])
            out.extend(("added", None, b) for b in new[b1:b2])
    return out


def _args_html(args: Any, other: Any, side: str) -> str:
    if not isinstance(args, dict):
        return f"<code>{e(_shown(args))}</code>"
    other = other if isinstance(other, dict) else {}
    items = []
    for key, value in args.items():
        changed = key not in other or _args_text(other.get(key)) != _args_text(value)
        mark = f' class="{side}"' if changed else ""
        items.append(f"<li{mark}><code>{e(key)}</code>=<code>{e(_args_text(value))}</code></li>")
    return (
        f'<ul class="args">{"".join(items)}</ul>'
        if items
        else '<span class="muted">no arguments</span>'
    )


def _call_cell(call: dict[str, Any] | None, other: dict[str, Any] | None, side: str) -> str:
    if call is None:
        return '<td class="gap">—</td>'
    return (
        f"<td><code>{e(call.get('name'))}</code> "
        f'<span class="muted">{e(call.get("id"))}</span>'
        f"{_args_html(call.get('arguments'), (other or {}).get('arguments'), side)}</td>"
    )


def word_diff(a: str, b: str) -> tuple[str, str]:
    """The two texts as HTML with removed words in ``<del>`` and added words in ``<ins>``."""
    wa, wb = a.split(" "), b.split(" ")
    left: list[str] = []
    right: list[str] = []
    for op, a1, a2, b1, b2 in difflib.SequenceMatcher(a=wa, b=wb, autojunk=False).get_opcodes():
        old, new = e(" ".join(wa[a1:a2])), e(" ".join(wb[b1:b2]))
        if op == "equal":
            left.append(old)
            right.append(new)
            continue
        if old:
            left.append(f"<del>{old}</del>")
        if new:
            right.append(f"<ins>{new}</ins>")
    return " ".join(left), " ".join(right)


def _side_by_side(result: dict[str, Any], mode: Any) -> str:
    recorded, new = result.get("recorded_trace"), result.get("new_trace")
    parts = []
    if recorded or new:
        rows = []
        labels = {
            "same": "same",
            "changed": "changed arguments",
            "removed": "removed",
            "added": "added",
            "recorded": "recorded",
        }
        tools_mode = mode == "tools"
        pairs = (
            [("recorded", call, None) for call in _calls(recorded)]
            if tools_mode
            else calls_diff(_calls(recorded), _calls(new))
        )
        for kind, a, b in pairs:
            rows.append(
                f'<tr class="d-{kind}"><th scope="row">{e(labels[kind])}</th>'
                f"{_call_cell(a, b, 'del')}{_call_cell(b, a, 'ins')}</tr>"
            )
        if tools_mode:
            caption = "recorded calls (tools mode replays these calls; there is no new model run)"
        elif not new:
            caption = "tool calls: recorded run (the new run was not kept)"
        else:
            caption = "tool calls: recorded run and new run"
        parts.append(
            f'<table class="sbs"><caption>{e(caption)}</caption><thead><tr>'
            '<th scope="col">change</th>'
            f'<th scope="col">recorded</th><th scope="col">new</th></tr></thead>'
            f"<tbody>{''.join(rows) or '<tr><td colspan=3>no tool calls</td></tr>'}</tbody></table>"
        )
    rec_out, new_out = result.get("recorded_output"), result.get("new_output")
    if "new_output" in result:
        left, right = word_diff(str(rec_out or ""), str(new_out or ""))
        parts.append(
            '<div class="answers"><div><h4>recorded answer</h4>'
            f'<pre class="text">{left}</pre></div><div><h4>new answer</h4>'
            f'<pre class="text">{right}</pre></div></div>'
        )
    elif rec_out is not None:
        parts.append(f'<h4>recorded answer</h4><pre class="text">{e(rec_out)}</pre>')
    return "".join(parts)


def _findings(result: dict[str, Any]) -> str:
    rows = []
    for f in result.get("findings") or []:
        rec = f.get("recorded")
        new = f.get("new")
        rows.append(
            f"<tr><td>{badge(str(f.get('grade')))}</td><td><code>{e(f.get('check'))}</code>"
            f"{(' · ' + e(f.get('tool'))) if f.get('tool') else ''}</td>"
            f"<td>{e(f.get('message'))}</td>"
            f"<td><code>{e('—' if rec is None else _shown(rec))}</code></td>"
            f"<td><code>{e('—' if new is None else _shown(new))}</code></td></tr>"
        )
    if not rows:
        return '<p class="muted">no findings</p>'
    return (
        '<table class="checks"><thead><tr><th scope="col">grade</th><th scope="col">check</th>'
        '<th scope="col">why</th><th scope="col">recorded</th><th scope="col">new</th></tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table>"
    )


def render_replay(data: dict[str, Any], *, nav: str = "") -> str:
    """The HTML page of a replay report (``toolproof replay --report json``)."""
    samples = data.get("results") or []
    embedded: dict[str, dict[str, Any]] = {}
    order = {"fail": 0, "error": 1, "warn": 2, "pass": 3}
    rows = [
        _sample_row(n, result, data.get("mode"), len(samples), embedded)
        for n, result in sorted(
            enumerate(samples), key=lambda item: order.get(str(item[1].get("grade")), 4)
        )
    ]
    filters = (
        '<form class="filters" id="filters" hidden role="search">'
        '<label>show <select id="f-state"><option value="">all samples</option>'
        '<option value="failing">failing (fail or error)</option><option value="warn">warn</option>'
        '<option value="pass">passing</option></select></label>'
        '<label>search <input id="f-text" type="search" placeholder="trace id, input…"></label>'
        '<span id="f-count" class="muted" aria-live="polite"></span></form>'
    )
    cases = (
        f'<section id="cases" aria-labelledby="cases-h"><h2 id="cases-h">Samples '
        f'<span class="muted">({len(samples)})</span></h2>{filters}'
        f'<div class="rows">{"".join(rows)}</div></section>'
    )
    head = (
        f'<header class="top"><h1>toolproof replay report ({e(data.get("mode"))})</h1>'
        f'<p class="muted">{e(data.get("started_at", ""))}</p></header>'
    )
    data_block = {"kind": "replay", "samples": embedded}
    body = head + _replay_summary(data) + cases
    return page("toolproof replay report", body, data=data_block, nav=nav)


def _replay_summary(data: dict[str, Any]) -> str:
    """The summary: the gate's verdict, the tiles, the facts and the grades' chart."""
    counts = data.get("counts") or {}
    gate = data.get("gate") or {}
    passed = bool(gate.get("passed"))
    samples = data.get("results") or []
    kind, verdict = ("pass", "gate passed") if passed else ("fail", "gate failed")
    if gate.get("verdict") == "undecided":
        kind = "pass" if passed else "error"
        verdict = "gate undecided" + (" (advisory: not blocking)" if passed else "")
    interval = gate.get("interval")
    rate_note = f"weighted {pct(data.get('weighted_fail_rate'))}"
    if isinstance(interval, dict) and isinstance(interval.get("level"), (int, float)):
        rate_note = (
            f"{100 * interval['level']:g}% {interval.get('method')} interval "
            f"{pct(interval.get('low'))}–{pct(interval.get('high'))} · {rate_note}"
        )
    if not samples:
        kind, verdict = "skipped", "nothing replayed"
    tiles = [
        tile("samples", count(len(samples)), e(f"{count(data.get('expired', 0))} expired")),
        tile(
            "grades",
            e(f"{counts.get('pass', 0)} / {counts.get('warn', 0)} / {counts.get('fail', 0)}"),
            e(f"pass / warn / fail · {counts.get('error', 0)} errors"),
        ),
        tile("failure rate", pct(data.get("fail_rate")), e(rate_note)),
        tile(
            "gate",
            e(verdict),
            e(
                f"{gate.get('mode') or 'advisory'} · threshold {pct(gate.get('threshold'))} · "
                f"rate {pct(gate.get('rate'))}"
                + (f" · about {gate['needed']} samples would decide" if gate.get("needed") else "")
            ),
            kind,
        ),
        tile(
            "duration", e(secs(data.get("duration_s"))), e(f"started {data.get('started_at', '')}")
        ),
    ]
    facts = [
        ("mode", data.get("mode")),
        ("new model", data.get("new_model") or "—"),
        ("real tools", ", ".join(data.get("real_tools") or []) or "none"),
        ("store", data.get("source") or "—"),
        ("aging", json.dumps(data.get("aging"), default=str) if data.get("aging") else "—"),
    ]
    return (
        f'<section id="summary" aria-labelledby="summary-h"><h2 id="summary-h">Summary '
        f'{badge(kind, verdict)}</h2><div class="tiles">{"".join(tiles)}</div>'
        f'<dl class="facts">{"".join(f"<dt>{e(k)}</dt><dd>{e(v)}</dd>" for k, v in facts)}</dl>'
        f'<div class="charts">{_grades_chart(counts, len(samples))}</div></section>'
    )


def _grades_chart(counts: dict[str, Any], samples: int) -> str:
    """A stacked bar of the samples by grade."""
    total = max(samples, 1)
    x = 0.0
    bars = []
    for grade in ("pass", "warn", "fail", "error"):
        n = counts.get(grade, 0)
        if not n:
            continue
        w = n / total * 600
        bars.append(
            f'<rect x="{x:.1f}" y="0" width="{w:.1f}" height="22" '
            f'fill="var(--{grade if grade != "warn" else "flaky"})">'
            f"<title>{e(grade)}: {n}</title></rect>"
        )
        x += w
    return figure(
        "samples by grade",
        chart_svg(
            "samples by grade", "Stacked bar: pass, warn, fail, error.", 600, 22, "".join(bars)
        ),
        ", ".join(f"{g} {counts.get(g, 0)}" for g in ("pass", "warn", "fail", "error")),
    )


def _sample_row(
    n: int,
    result: dict[str, Any],
    mode: Any,
    samples: int,
    embedded: dict[str, dict[str, Any]],
) -> str:
    """One sample, folded: its grade, findings, the diff of a warn or fail, both runs."""
    grade = str(result.get("grade"))
    diff = _side_by_side(result, mode) if grade in ("warn", "fail") else ""
    notes = "".join(f"<li>{e(x)}</li>" for x in result.get("notes") or [])
    search = f"{result.get('trace_id', '')} {result.get('input', '')}".lower()
    first = (result.get("findings") or [{}])[0].get("message", "")
    return (
        f'<details class="case sample" id="sample-{n}" data-c="{n}" data-verdict="{e(grade)}" '
        f'data-class="" data-tags="" data-search="{e(search)}"'
        f"{' open' if grade == 'fail' and samples <= 50 else ''}><summary>{badge(grade)} "
        f'<code class="name">{e(str(result.get("trace_id", ""))[:12])}</code> '
        f'<span class="reason">{e(result.get("input"))}</span> '
        f'<span class="muted">{e(first)}</span></summary><div class="case-body">'
        f'<dl class="meta"><dt>trace</dt><dd>{e(result.get("trace_id"))}</dd>'
        f"<dt>recorded model</dt><dd>{e(result.get('recorded_model'))}</dd>"
        f"<dt>age</dt><dd>{e(result.get('age_days'))} days "
        f"(weight {e(result.get('weight'))})</dd></dl>"
        f"{'<ul class=notes>' + notes + '</ul>' if notes else ''}"
        f"{_findings(result)}{diff}{_both_runs(n, result, embedded)}</div></details>"
    )


def _both_runs(n: int, result: dict[str, Any], embedded: dict[str, dict[str, Any]]) -> str:
    """Both runs' step views side by side (filled by the script from the embedded data)."""
    sides = {k: result[k] for k in ("recorded_trace", "new_trace") if result.get(k)}
    if not sides:
        return ""
    embedded[str(n)] = sides
    slots = "".join(
        f'<div><h4>{e(label)}</h4><div class="trace-slot" data-s="{n}" data-side="{key}">'
        + ("" if key in sides else '<p class="muted">not kept</p>')
        + "</div></div>"
        for key, label in (("recorded_trace", "recorded run"), ("new_trace", "new run"))
    )
    return (
        f'<details class="rtrace" data-s="{n}"><summary>both runs, step by step</summary>'
        f'<div class="answers">{slots}</div></details>'
    )
