"""The HTML report of an eval run (``--report html:PATH``): summary, charts, cases, traces.

The summary and the charts are rendered here, so they need no JavaScript; the trials and
their traces are embedded as data for the script (see :mod:`toolproof._html`, the page
shell, for the escaping rules). The renderer takes the JSON report's data.
"""

from __future__ import annotations

import io
import json
import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import IO, Any

from toolproof._html import (
    DATA_END,
    DATA_START,
    badge,
    chart_svg,
    cost,
    count,
    e,
    embed_json,
    figure,
    page_end,
    page_start,
    pct,
    secs,
    tile,
)
from toolproof._messages import refused as refused_call
from toolproof._stats_text import gate_line

__all__ = [
    "expand_eval_data",
    "page_trial",
    "render_eval",
    "write_eval_page",
]

#: Above this many trials, passing trials' checks are rendered by the script when opened
#: (failing ones are always in the page), which keeps big reports small and fast to open.
FULL_CHECKS_LIMIT = 2000
#: Cases drawn in the pass-rate chart (the lowest pass rates first).
BAR_CASES = 40
#: Cases drawn in the trial-outcome grid, and trials in the latency and token charts.
GRID_CASES = 1200
SERIES_TRIALS = 400

_COLORS = {
    "pass": "var(--pass)",
    "fail": "var(--fail)",
    "error": "var(--error)",
    "simulator_fault": "var(--muted)",
}


# -- eval reports -------------------------------------------------------------------------


def _case_class(case: dict[str, Any]) -> str:
    stats = case.get("stats") or {}
    return str(stats.get("classification") or "")


def _case_rate(case: dict[str, Any]) -> float | None:
    trials = case.get("trials") or []
    if not trials:
        return None
    return sum(1 for t in trials if t.get("status") == "pass") / len(trials)


def _trial_tokens(trial: dict[str, Any]) -> tuple[int, int]:
    usage = trial.get("usage") or {}
    return int(usage.get("input_tokens") or 0), int(usage.get("output_tokens") or 0)


def _interval_text(interval: Any) -> str | None:
    """``"63.3% (95% cluster-wilson interval 26.2%–89.4%)"``, or None when absent."""
    if not isinstance(interval, dict):
        return None
    try:
        level = f"{100 * float(interval['level']):g}%"
        low, high = pct(interval["low"]), pct(interval["high"])
        return f"{level} {interval['method']} interval {low}–{high}"
    except (KeyError, TypeError, ValueError):
        return None


def _interval_meta(intervals: Any) -> list[tuple[str, str]]:
    """A case's pass rate and pass^k with their intervals, for its facts."""
    if not isinstance(intervals, dict):
        return []
    out = []
    rate = _interval_text(intervals.get("pass_rate"))
    if rate is not None:
        out.append(("pass rate", f"{pct(intervals['pass_rate'].get('estimate'))} ({rate})"))
    hat = intervals.get("pass_hat_k")
    text = _interval_text(hat)
    if text is not None and isinstance(hat, dict):
        out.append((f"pass^{hat.get('k')} interval", text))
    return out


_VERDICTS = {
    0: ("pass", "passed"),
    1: ("fail", "failed"),
    3: ("error", "undecided: the model provider failed"),
    5: ("skipped", "nothing ran"),
    6: ("error", "undecided: too few samples for the release gate"),
}


def _eval_summary(data: dict[str, Any]) -> str:
    s = data.get("summary") or {}
    cases = data.get("cases") or []
    code = data.get("exit_code", s.get("exit_code"))
    kind, verdict = _VERDICTS.get(
        code if isinstance(code, int) else -1, ("error", f"exit code {code}")
    )
    if data.get("interrupted"):
        verdict += " (interrupted: the cases finished so far)"
    gate = s.get("gate")
    gate_tile = tile(
        "gate",
        e(verdict),
        e(
            (gate_line(gate, "cases") if isinstance(gate, dict) else "")
            or f"{count(s.get('blocking_failed'))} blocking failed · "
            f"{count(s.get('advisory_failed'))} advisory · exit code {code}"
        ),
        kind,
    )
    tiles = [*_rate_tiles(s, cases), gate_tile, *_run_tiles(data, s)]
    dl = "".join(f"<dt>{e(k)}</dt><dd>{e(v)}</dd>" for k, v in _summary_facts(data, s, cases))
    return (
        f'<section id="summary" aria-labelledby="summary-h"><h2 id="summary-h">Summary '
        f"{badge(kind, verdict)}</h2>"
        f'<div class="tiles">{"".join(tiles)}</div><dl class="facts">{dl}</dl>'
        f'<div class="charts">{_eval_charts(cases)}</div></section>'
    )


def _rate_tiles(s: dict[str, Any], cases: list[dict[str, Any]]) -> list[str]:
    """The summary's tiles of outcomes: cases, trials, pass rate, pass^k, flaky cases."""
    stats = s.get("stats") or {}
    hat = stats.get("pass_hat_k") or {}
    if hat and stats.get("cases"):
        k = max(hat, key=lambda key: int(key))
        pass_hat = f"{pct(hat[k])}"
        hat_note = f"pass^{e(k)} over {count(stats.get('cases'))} model cases"
    else:
        pass_hat, hat_note = "—", "no model cases (scripted runs are not counted)"
    intervals = s.get("intervals") or {}
    rate_note = _interval_text(intervals.get("pass_rate"))
    hat_interval = _interval_text(intervals.get("pass_hat_k"))
    if hat_interval is not None:
        hat_note += f" · {e(hat_interval)}"
    flaky = sum(1 for c in cases if _case_class(c) == "flaky")
    trials = s.get("trials") or 0
    faults = s.get("trials_simulator_fault")
    return [
        tile(
            "cases passed",
            f"{count(s.get('passed'))} / {count(s.get('cases'))}",
            e(
                f"{count(s.get('failed'))} failed · {count(s.get('errors'))} errors · "
                f"{count(s.get('skipped'))} skipped"
                + (f" · {count(faults)} trials with simulator faults" if faults else "")
            ),
        ),
        tile(
            "trial pass rate",
            pct((s.get("trials_passed") or 0) / trials if trials else None),
            e(f"{count(s.get('trials_passed'))} of {count(trials)} trials"),
        ),
        tile(
            "pass rate (mean over cases)",
            pct((intervals.get("pass_rate") or {}).get("estimate")),
            e(rate_note or "no model cases"),
        ),
        tile("pass^k", pass_hat, hat_note),
        tile(
            "flaky cases",
            count(flaky),
            "some trials passed, some did not",
            "flaky" if flaky else "",
        ),
    ]


def _run_tiles(data: dict[str, Any], s: dict[str, Any]) -> list[str]:
    """The summary's tiles of what the run took: cost, tokens, duration."""
    usage = s.get("usage") or {}
    return [
        tile(
            "cost",
            e(cost(s.get("cost"))),
            e(f"{count(s.get('model_calls'))} model calls · {count(s.get('cached_calls'))} cached"),
        ),
        tile(
            "tokens",
            e(count((usage.get("input_tokens") or 0) + (usage.get("output_tokens") or 0))),
            e(
                f"{count(usage.get('input_tokens'))} in · "
                f"{count(usage.get('output_tokens'))} out · "
                f"{count(usage.get('cached_tokens'))} cached"
            ),
        ),
        tile(
            "duration", e(secs(data.get("duration_s"))), e(f"started {data.get('started_at', '')}")
        ),
    ]


def _summary_facts(
    data: dict[str, Any], s: dict[str, Any], cases: list[dict[str, Any]]
) -> list[tuple[str, str]]:
    """The summary's facts: models, judge, tool calls, real tools, suites, versions."""
    models = sorted({str(c.get("model")) for c in cases if c.get("model")})
    judges = sorted({str(c.get("judge_model")) for c in cases if c.get("judge_model")})
    real = sorted({str(n) for c in cases for n in c.get("real_tools") or []})
    facts = [
        ("models", ", ".join(models) or "—"),
        ("judge", ", ".join(judges) or "none"),
        *_call_facts(cases),
        ("real tools", ", ".join(real) or "none named (tools a mocked case runs for real)"),
        ("suites", ", ".join(str(x.get("name")) for x in data.get("suites") or []) or "—"),
        ("toolproof", f"{data.get('toolproof', '')} · report v{data.get('version', '')}"),
    ]
    scripted = s.get("scripted_cases") or 0
    if scripted:
        facts.append(("scripted", f"{scripted} cases checked the wiring, not a model"))
    return facts


def _call_facts(cases: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """Tool calls (mocked, real, refused) and errors by kind, over every trial's traces."""
    calls = mocked = refused = 0
    kinds: dict[str, int] = {}
    for case in cases:
        for trial in case.get("trials") or []:
            error = trial.get("error")
            if isinstance(error, dict):
                key = f"{error.get('type')} (trial)"
                kinds[key] = kinds.get(key, 0) + 1
            for trace in trial.get("traces") or []:
                for step in trace.get("steps") or []:
                    for result in step.get("tool_results") or []:
                        calls += 1
                        if refused_call(result.get("status"), result.get("error_type")):
                            refused += 1  # (no tool ran: neither mocked nor real)
                        else:
                            mocked += bool(result.get("mocked"))
                        if result.get("status") != "ok":
                            key = f"{result.get('error_type') or result.get('status')} (tool)"
                            kinds[key] = kinds.get(key, 0) + 1
    ranked = sorted(kinds.items(), key=lambda item: (-item[1], item[0]))
    errors = ", ".join(f"{k} ×{n}" for k, n in ranked) or "none"
    return [
        (
            "tool calls",
            f"{calls:,} ({mocked:,} mocked, {calls - mocked - refused:,} real, "
            f"{refused:,} refused before running)",
        ),
        ("errors by kind", errors),
    ]


def _eval_charts(cases: list[dict[str, Any]]) -> str:
    if not cases:
        return ""
    return (
        _rate_bars(cases)
        + _outcome_grid(cases)
        + _trial_series(cases, "duration", "trial durations (ms)")
        + _trial_series(cases, "tokens", "tokens per trial (input + output)")
    )


def _rate_bars(cases: list[dict[str, Any]]) -> str:
    rated = [(c, r) for c in cases if (r := _case_rate(c)) is not None]
    rated.sort(key=lambda item: item[1])
    shown = rated[:BAR_CASES]
    if not shown:
        return ""
    row, label_w, bar_w = 18, 260, 300
    height = row * len(shown) + 24
    parts = [
        f'<line x1="{label_w}" y1="0" x2="{label_w}" y2="{height - 20}" class="axis"/>',
        f'<text x="{label_w}" y="{height - 6}" class="tick">0%</text>',
        f'<text x="{label_w + bar_w}" y="{height - 6}" class="tick" text-anchor="end">100%</text>',
    ]
    for n, (case, rate) in enumerate(shown):
        y = n * row
        trials = case.get("trials") or []
        passed = sum(1 for t in trials if t.get("status") == "pass")
        name = str(case.get("id") or case.get("name"))
        short = name if len(name) <= 38 else name[:37] + "…"
        color = "var(--pass)" if rate == 1 else "var(--fail)" if rate == 0 else "var(--flaky)"
        parts.append(
            f"<g><title>{e(name)}: {passed}/{len(trials)} trials passed ({pct(rate)})</title>"
            f'<text x="{label_w - 6}" y="{y + 13}" class="lbl" text-anchor="end">{e(short)}</text>'
            f'<rect x="{label_w}" y="{y + 3}" width="{max(rate * bar_w, 1.5):.1f}" '
            f'height="{row - 6}" '
            f'fill="{color}"/><text x="{label_w + max(rate * bar_w, 1.5) + 4:.1f}" y="{y + 13}" '
            f'class="tick">{pct(rate)}</text></g>'
        )
    caption = f"the {len(shown)} lowest of {len(rated)} cases" if len(rated) > len(shown) else ""
    svg = chart_svg(
        "pass rate per case",
        "Horizontal bars: share of trials that passed for each case, lowest first.",
        label_w + bar_w + 60,
        height,
        "".join(parts),
    )
    return figure("pass rate per case", svg, caption)


def _outcome_grid(cases: list[dict[str, Any]]) -> str:
    shown = cases[:GRID_CASES]
    k = max((len(c.get("trials") or []) for c in shown), default=0)
    if not k:
        return ""
    cell, per_band = (16, 30) if len(shown) <= 30 else (12, 40) if len(shown) <= 200 else (7, 100)
    bands = math.ceil(len(shown) / per_band)
    band_h = k * cell + 6
    width, height = min(len(shown), per_band) * cell, bands * band_h
    rects = []
    for n, case in enumerate(shown):
        x = (n % per_band) * cell
        top = (n // per_band) * band_h
        for t, trial in enumerate(case.get("trials") or []):
            status = str(trial.get("status"))
            rects.append(
                f'<rect x="{x}" y="{top + t * cell}" width="{cell - 1}" height="{cell - 1}" '
                f'fill="{_COLORS.get(status, "var(--muted)")}"><title>{e(case.get("id"))} '
                f"trial {t + 1}: {e(status)}</title></rect>"
            )
    caption = f"first {len(shown)} of {len(cases)} cases" if len(cases) > len(shown) else ""
    caption = (caption + "; " if caption else "") + "one column per case, one cell per trial"
    svg = chart_svg(
        "trial outcomes",
        "Grid of cells: green passed, red failed, amber errored.",
        width,
        height,
        "".join(rects),
    )
    legend = (
        '<p class="legend"><span class="sw" style="background:var(--pass)"></span>pass '
        '<span class="sw" style="background:var(--fail)"></span>fail '
        '<span class="sw" style="background:var(--error)"></span>error</p>'
    )
    return figure("trial outcomes", svg + legend, caption)


def _trial_series(cases: list[dict[str, Any]], what: str, title: str) -> str:
    values: list[tuple[str, float, float, str]] = []
    total = 0
    for case in cases:
        for trial in case.get("trials") or []:
            total += 1
            if len(values) >= SERIES_TRIALS:
                continue
            label = f"{case.get('id')} trial {int(trial.get('index') or 0) + 1}"
            if what == "duration":
                values.append(
                    (label, float(trial.get("duration_ms") or 0), 0.0, str(trial.get("status")))
                )
            else:
                i, o = _trial_tokens(trial)
                values.append((label, float(i), float(o), str(trial.get("status"))))
    if not values:
        return ""
    top = max(a + b for _, a, b, _ in values) or 1.0
    width, height = 520, 110
    bar = width / len(values)
    parts = [f'<line x1="0" y1="{height}" x2="{width}" y2="{height}" class="axis"/>']
    for n, (label, a, b, status) in enumerate(values):
        x = n * bar
        ha, hb = a / top * (height - 10), b / top * (height - 10)
        if what == "duration":
            tip = f"{label}: {a:.0f} ms ({status})"
            fill = _COLORS.get(status, "var(--muted)")
            parts.append(
                f'<rect x="{x:.2f}" y="{height - ha:.2f}" width="{max(bar - 0.5, 0.5):.2f}" '
                f'height="{ha:.2f}" fill="{fill}"><title>{e(tip)}</title></rect>'
            )
        else:
            tip = f"{label}: {a:.0f} in + {b:.0f} out tokens"
            parts.append(
                f"<g><title>{e(tip)}</title>"
                f'<rect x="{x:.2f}" y="{height - ha:.2f}" width="{max(bar - 0.5, 0.5):.2f}" '
                f'height="{ha:.2f}" fill="var(--accent)"/>'
                f'<rect x="{x:.2f}" y="{height - ha - hb:.2f}" width="{max(bar - 0.5, 0.5):.2f}" '
                f'height="{hb:.2f}" fill="var(--accent2)"/></g>'
            )
    unit = "ms" if what == "duration" else "tokens"
    parts.append(f'<text x="2" y="10" class="tick">max {top:,.0f} {unit}</text>')
    caption = f"first {len(values)} of {total} trials" if total > len(values) else ""
    if what == "tokens":
        caption = (caption + "; " if caption else "") + "dark: input, light: output"
    svg = chart_svg(
        title, f"Bars, one per trial in run order: {title}.", width, height + 2, "".join(parts)
    )
    return figure(title, svg, caption)


def _check_rows(trial: dict[str, Any]) -> str:
    rows = []
    for check in trial.get("checks") or []:
        status = str(check.get("status"))
        where = f" (turn {check['turn']})" if check.get("turn") is not None else ""
        crit = (
            f'<div class="crit">criterion: {e(check["criterion"])}</div>'
            if check.get("criterion")
            else ""
        )
        rows.append(
            f'<tr class="ck-{e(status)}"><td>{badge(status)}</td>'
            f"<td><code>{e(check.get('check'))}</code>{e(where)}"
            f'<div class="kind">{e(check.get("kind"))}</div></td>'
            f"<td>{e(check.get('reason'))}{crit}</td></tr>"
        )
    if not rows:
        return '<p class="muted">no checks</p>'
    return (
        '<table class="checks"><thead><tr><th scope="col">status</th><th scope="col">check</th>'
        f'<th scope="col">reason</th></tr></thead><tbody>{"".join(rows)}</tbody></table>'
    )


def _trial_block(c: int, trial: dict[str, Any], full: bool) -> str:
    status = str(trial.get("status"))
    i, o = _trial_tokens(trial)
    index = int(trial.get("index") or 0)
    bits = [
        f"{float(trial.get('duration_ms') or 0):.0f} ms",
        f"{i + o:,} tokens",
    ]
    if trial.get("cost") is not None:
        bits.append(cost(trial.get("cost")))
    if (trial.get("attempts") or 1) > 1:
        bits.append(f"{trial['attempts']} attempts")
    traces = trial.get("traces") or []
    calls = sum(len(st.get("tool_results") or []) for tr in traces for st in tr.get("steps") or [])
    bits.append(f"{calls} tool call{'s' if calls != 1 else ''}")
    err = trial.get("error") or None
    error = (
        f'<p class="err">{e(err.get("type"))}: {e(err.get("message"))}</p>'
        if isinstance(err, dict)
        else ""
    )
    checks = (
        _check_rows(trial)
        if full or status != "pass"
        else '<div class="checks-slot"><p class="muted">every check passed</p></div>'
    )
    return (
        f'<details class="trial" data-c="{c}" data-t="{index}"><summary>'
        f"{badge(status)} trial {index + 1} "
        f'<span class="muted">{e(" · ".join(bits))}</span></summary>'
        f'<div class="trial-body">{error}{checks}'
        f'<div class="trace-slot" data-c="{c}" data-t="{index}"><noscript><p class="muted">'
        "The step-by-step trace view needs JavaScript; the traces are in the JSON report."
        "</p></noscript></div></div></details>"
    )


def _cells(trials: Sequence[dict[str, Any]]) -> str:
    return "".join(
        f'<span class="cell c-{e(t.get("status"))}" '
        f'title="trial {n + 1}: {e(t.get("status"))}"></span>'
        for n, t in enumerate(trials)
    )


def _eval_cases(data: dict[str, Any], whole: Iterable[dict[str, Any]]) -> Iterator[str]:
    """The case list, a case at a time: ``whole`` gives each case with its whole trials."""
    cases = data.get("cases") or []
    total_trials = sum(len(c.get("trials") or []) for c in cases)
    full = total_trials <= FULL_CHECKS_LIMIT
    tags = sorted({str(t) for c in cases for t in c.get("tags") or []})
    tag_options = "".join(f'<option value="{e(t)}">{e(t)}</option>' for t in tags)
    filters = (
        '<form class="filters" id="filters" hidden role="search">'
        '<label>show <select id="f-state"><option value="">all cases</option>'
        '<option value="failing">failing (fail or error)</option>'
        '<option value="flaky">flaky</option><option value="pass">passing</option></select></label>'
        f'<label>tag <select id="f-tag"><option value="">any</option>{tag_options}</select></label>'
        '<label>search <input id="f-text" type="search" placeholder="case name, tag…"></label>'
        '<span id="f-count" class="muted" aria-live="polite"></span></form>'
    )
    yield (
        f'<section id="cases" aria-labelledby="cases-h"><h2 id="cases-h">Cases '
        f'<span class="muted">({len(cases)})</span></h2>{filters}<div class="rows">'
    )
    for n, case in enumerate(whole):
        verdict = str(case.get("verdict"))
        klass = _case_class(case)
        trials = case.get("trials") or []
        case_tags = [str(t) for t in case.get("tags") or []]
        search = " ".join(
            [str(case.get("id") or ""), str(case.get("description") or ""), *case_tags]
        ).lower()
        tag_html = "".join(f'<span class="tag">{e(t)}</span>' for t in case_tags)
        flaky = badge("flaky") if klass == "flaky" else ""
        advisory = badge("advisory", "advise") if case.get("gate") == "advise" else ""
        meta = [
            ("where", f"{case.get('file')}:{case.get('line')}"),
            ("model", case.get("model") or "—"),
            ("tools", case.get("tools")),
            ("real tools", ", ".join(case.get("real_tools") or []) or "none"),
            ("gate", case.get("gate")),
            ("pass rule", case.get("pass_rule")),
            (
                "trials",
                f"{case.get('passes', 0)} passed / {len(trials)} of "
                f"{case.get('trials_planned')} planned",
            ),
        ]
        if case.get("description"):
            meta.insert(0, ("description", case.get("description")))
        st = case.get("stats") or {}
        if st.get("pass_hat_k"):
            k = max(st["pass_hat_k"], key=lambda key: int(key))
            meta.append((f"pass^{k}", pct(st["pass_hat_k"][k])))
        meta += _interval_meta(case.get("intervals"))
        dl = "".join(f"<dt>{e(k)}</dt><dd>{e(v)}</dd>" for k, v in meta)
        body = "".join(_trial_block(n, t, full) for t in trials)
        yield (
            f'<details class="case" id="case-{n}" data-c="{n}" data-verdict="{e(verdict)}" '
            f'data-class="{e(klass)}" data-tags="{e(chr(31).join(case_tags))}" '
            f'data-search="{e(search)}"><summary>{badge(verdict)} '
            f'<span class="name">{e(case.get("id") or case.get("name"))}</span> {flaky}{advisory}'
            f'<span class="cells" aria-hidden="true">{_cells(trials)}</span> '
            f'<span class="reason">{e(case.get("reason"))}</span> {tag_html}</summary>'
            f'<div class="case-body"><dl class="meta">{dl}</dl>{body}</div></details>'
        )
    yield "</div></section>"


def _quality(data: dict[str, Any]) -> str:
    """Retrieval quality per suite: ranking metrics (macro, micro recall), grounding, judge."""
    quality = (data.get("summary") or {}).get("quality") or []
    if not quality:
        return ""
    from toolproof.rag._metrics import METRICS

    def cell(value: Any, interval: Any = None) -> str:
        if not isinstance(value, (int, float)):
            return "<td>—</td>"
        shown = _interval_text(interval)
        title = f' title="{e(shown)}"' if shown else ""
        bounds = (
            f' <span class="muted">[{interval["low"]:.3f}, {interval["high"]:.3f}]</span>'
            if shown
            else ""
        )
        return f"<td{title}>{e(f'{value:.3f}')}{bounds}</td>"

    rows, tiles = [], []
    for entry in quality:
        suite = str(entry.get("suite", ""))
        for item in entry.get("retrieval") or []:
            k = item.get("k")
            macro, micro = item.get("macro") or {}, item.get("micro") or {}
            bounds = item.get("intervals") or {}
            rows.append(
                f"<tr><td>{e(suite)}</td><td><code>{e(item.get('tool'))}</code></td>"
                f"<td>{e(k if k is not None else 'all')}</td><td>{count(item.get('queries'))}"
                f"</td><td>{count(item.get('undefined'))}</td>"
                + "".join(cell(macro.get(m), bounds.get(m)) for m in METRICS)
                + cell(micro.get("recall"))
                + "</tr>"
            )
        grounding = entry.get("grounding")
        if grounding:
            answers = grounding.get("answers") or 0
            ok = answers - (grounding.get("ungrounded_answers") or 0)
            note = (
                f"{count(grounding.get('ungrounded_claims'))} of {count(grounding.get('claims'))}"
            )
            tiles.append(
                tile(
                    f"{suite}: grounded in retrieval",
                    f"{count(ok)} / {count(answers)}",
                    e(f"answers; {note} facts not in the retrieved chunks"),
                    "fail" if ok < answers else "",
                )
            )
        faith = entry.get("faithfulness")
        if faith:
            rate = faith.get("hallucination_rate")
            tiles.append(
                tile(
                    f"{suite}: hallucination rate (judged)",
                    pct(rate),
                    e(
                        f"{count(faith.get('claims'))} claims of {count(faith.get('answers'))} "
                        f"answers: {count(faith.get('supported'))} supported, "
                        f"{count(faith.get('contradicted'))} contradicted, "
                        f"{count(faith.get('not_found'))} not found"
                    ),
                    "fail" if rate else "",
                )
            )
    head = "".join(
        f'<th scope="col">{e(h)}</th>'
        for h in ("suite", "tool", "k", "queries", "no relevant ids", *METRICS, "micro recall")
    )
    table = f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
    return (
        '<section id="quality" aria-labelledby="quality-h"><h2 id="quality-h">Retrieval quality'
        '</h2><p class="muted">means over the queries with relevant ids (macro); micro recall '
        "pools every relevant id</p>"
        f'{table if rows else ""}<div class="tiles">{"".join(tiles)}</div></section>'
    )


def _costs(data: dict[str, Any]) -> str:
    """Cost, latency and tokens per suite (p50/p95/max over trials), agent and judge apart."""
    from toolproof.evals._costs import cost_lines

    costs = (data.get("summary") or {}).get("costs") or {}
    suites = costs.get("suites") or []
    if not suites:
        return ""

    def cell(figures: Any, key: str, show: Callable[[Any], str]) -> str:
        found = (figures or {}).get(key)
        if not found:
            return "<td>—</td>"
        text = " / ".join(show(found[k]) for k in ("p50", "p95", "max"))
        return f"<td>{e(text)}</td>"

    rows = []
    for suite in suites:
        for who in ("agent", "judge"):
            figures = suite.get(who)
            if not figures:
                continue
            per_case = suite.get("cost_per_case") if who == "agent" else None
            rows.append(
                f"<tr><td>{e(suite.get('suite'))}</td><td>{e(who)}</td>"
                + cell(figures, "latency_s", secs)
                + cell(figures, "tokens", lambda value: f"{value:g}")
                + cell(figures, "cost", lambda value: f"{value:.4g}")
                + f"<td>{e(cost(per_case)) if per_case is not None else '—'}</td></tr>"
            )
    head = "".join(
        f'<th scope="col">{e(h)}</th>'
        for h in ("suite", "who", "latency", "tokens", "cost ($)", "cost per case")
    )
    notes = cost_lines({**costs, "suites": []})  # the comparison, its gates, the estimate
    listed = "".join(f"<li>{e(line)}</li>" for line in notes)
    return (
        '<section id="costs" aria-labelledby="costs-h"><h2 id="costs-h">Cost and latency</h2>'
        '<p class="muted">p50 / p95 / max over the trials that ran</p>'
        f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
        f"{f'<ul>{listed}</ul>' if listed else ''}</section>"
    )


def render_eval(data: dict[str, Any], *, nav: str = "") -> str:
    """The HTML page of an eval report (``format: toolproof-eval-report``)."""
    out = io.StringIO()
    write_eval_page(out, data, lambda: iter(data.get("cases") or []), nav=nav)
    return out.getvalue()


def write_eval_page(
    out: IO[str],
    data: dict[str, Any],
    cases: Callable[[], Iterable[dict[str, Any]]],
    *,
    nav: str = "",
) -> None:
    """Write the HTML page of an eval report, its embedded data one case at a time.

    Args:
        out: Where the page goes.
        data: The report's data; its trials may hold only what the summary and the charts
            read (see :func:`page_trial`).
        cases: The report's cases with their whole trials, read twice: as the case list is
            rendered, and as they are embedded.
        nav: The viewer's navigation bar.
    """
    title = "toolproof eval report"
    suites = ", ".join(str(s.get("name")) for s in data.get("suites") or [])
    head = (
        f'<header class="top"><h1>{e(title)}</h1><p class="muted">{e(suites)} · '
        f"{e(data.get('started_at', ''))}</p></header>"
    )
    out.write(page_start(f"{title}: {suites}", nav))
    from toolproof.evals._attacks import attack_html

    attacks = attack_html((data.get("summary") or {}).get("attacks") or [])
    out.write(head + _eval_summary(data) + _quality(data) + attacks + _costs(data))
    out.writelines(_eval_cases(data, cases()))
    out.write(DATA_START)
    # {"kind": "eval", ...the report..., "cases": [...], "tool_sets": [...]}, case by case
    rest = {k: v for k, v in data.items() if k != "cases"}
    start = embed_json({"kind": "eval", **rest, "cases": []})
    out.write(start[: -len("]}")])
    sets: list[Any] = []
    index: dict[str, int] = {}
    for number, case in enumerate(cases()):
        out.write(("," if number else "") + embed_json(_compact_case(case, sets, index)))
    out.write('],"tool_sets":' + embed_json(sets) + "}" + DATA_END + page_end())


def page_trial(trial: dict[str, Any]) -> dict[str, Any]:
    """What the summary and the charts read of a trial: no checks, traces as tool results."""
    trial = {k: v for k, v in trial.items() if k != "checks"}
    traces = trial.get("traces")
    if not traces:
        return trial
    keep = ("mocked", "status", "error_type")
    slim = [
        {
            "steps": [
                {"tool_results": [{k: r.get(k) for k in keep} for r in s.get("tool_results") or []]}
                for s in trace.get("steps") or []
            ]
        }
        for trace in traces
        if isinstance(trace, dict)
    ]
    return {**trial, "traces": slim}


def _compact_case(case: dict[str, Any], sets: list[Any], index: dict[str, int]) -> dict[str, Any]:
    """``case`` with each trace's tools replaced by the number of its set in ``sets``."""
    trials = []
    for trial in case.get("trials") or []:
        traces = []
        for trace in trial.get("traces") or []:
            tools = trace.get("tools") if isinstance(trace, dict) else None
            if not tools:
                traces.append(trace)
                continue
            key = json.dumps(tools, sort_keys=True, default=str)
            if key not in index:
                index[key] = len(sets)
                sets.append(tools)
            slim = {k: v for k, v in trace.items() if k != "tools"}
            slim["tools_ref"] = index[key]
            traces.append(slim)
        trials.append({**trial, "traces": traces} if "traces" in trial else trial)
    return {**case, "trials": trials} if "trials" in case else case


def expand_eval_data(embedded: dict[str, Any]) -> dict[str, Any]:
    """The report's data from the page's (what the script does; used by tests).

    The page keeps each distinct list of offered tools once, in ``tool_sets``, and each trace
    names its set in ``tools_ref``; this puts them back.
    """
    sets = embedded.get("tool_sets") or []
    out = {k: v for k, v in embedded.items() if k not in ("kind", "tool_sets")}
    for case in out.get("cases") or []:
        for trial in case.get("trials") or []:
            for trace in trial.get("traces") or []:
                if "tools_ref" in trace:
                    trace["tools"] = sets[trace.pop("tools_ref")]
    return out
