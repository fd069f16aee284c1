"""The local web viewer behind ``toolproof view``: run logs, comparisons and the trace store.

Pages (all GET, all rendered here with every value escaped):

- ``/``: the run list (``.toolproof/runs/<id>/meta.json`` and ``report.json``);
- ``/runs/<id>``: a run's report, the same page as ``--report html``;
  ``/runs/<id>/report.json``: its JSON;
- ``/compare?a=<id>&b=<id>``: two runs case by case (regressions first);
- ``/traces?since=&until=&tool=&model=&tag=&status=&id=&limit=``: the trace store with the
  filters of ``toolproof traces list``; ``/traces/<id>``: one trace's step view.

Run ids are checked against a strict pattern and must name a folder directly inside the runs
folder, so no URL reaches a file outside it. Requests whose ``Host`` is not the address
served are refused (a web page elsewhere cannot read the viewer through DNS rebinding).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolproof._html import e, page, render_trace_page
from toolproof.view._render import render_report

if TYPE_CHECKING:
    from aiohttp import web

__all__ = ["RUN_ID", "Runs", "make_app"]

#: What a run folder's name may look like (``20261201T092317Z-run-3fa9c0``).
RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,120}$")
#: A trace id (or prefix) in a URL.
TRACE_ID = re.compile(r"^[A-Za-z0-9_.:-]{1,200}$")

_NAV = (
    '<nav class="bar" aria-label="viewer"><a href="/">runs</a><a href="/compare">compare</a>'
    '<a href="/traces">traces</a></nav>'
)
_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; "
        "img-src data:; form-action 'self'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


@dataclass
class Runs:
    """Where the viewer finds runs: a runs folder, or one report file.

    Attributes:
        root: The runs folder (``.toolproof/runs``): one folder per run.
        single: A single JSON report given instead of a folder (listed as ``report``).
    """

    root: Path | None = None
    single: Path | None = None
    _cache: dict[Path, tuple[float, str]] = field(default_factory=dict)

    def ids(self) -> list[str]:
        """Run ids, newest first (folder names start with their UTC time)."""
        if self.single is not None:
            return ["report"]
        if self.root is None or not self.root.is_dir():
            return []
        found = [
            p.name
            for p in self.root.iterdir()
            if p.is_dir() and RUN_ID.match(p.name) and (p / "report.json").is_file()
        ]
        return sorted(found, reverse=True)

    def report_path(self, run_id: str) -> Path | None:
        """The report file of a run, or ``None`` for an unknown or malformed id."""
        if not RUN_ID.match(run_id) or ".." in run_id:
            return None
        if self.single is not None:
            return self.single if run_id == "report" else None
        if self.root is None:
            return None
        folder = (self.root / run_id).resolve()
        if folder.parent != self.root.resolve():
            return None
        path = folder / "report.json"
        return path if path.is_file() else None

    def meta(self, run_id: str) -> dict[str, Any]:
        """The run's ``meta.json`` (``{}`` when missing or unreadable)."""
        if self.single is not None or self.root is None:
            return {}
        try:
            data = json.loads((self.root / run_id / "meta.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def load(self, run_id: str) -> dict[str, Any] | None:
        """The run's JSON report, or ``None``."""
        path = self.report_path(run_id)
        if path is None:
            return None
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return data if isinstance(data, dict) else None

    def page(self, run_id: str) -> str | None:
        """The run's HTML page (cached while the report file is unchanged)."""
        path = self.report_path(run_id)
        if path is None:
            return None
        mtime = path.stat().st_mtime
        cached = self._cache.get(path)
        if cached and cached[0] == mtime:
            return cached[1]
        data = self.load(run_id)
        if data is None:
            return None
        text = render_report(data, nav=_NAV)
        if len(self._cache) >= 4:
            self._cache.pop(next(iter(self._cache)))
        self._cache[path] = (mtime, text)
        return text


def _kind(run_id: str, meta: dict[str, Any]) -> str:
    if meta.get("kind"):
        return str(meta["kind"])
    match = re.match(r"^\d{8}T\d{6}Z-(run|replay)-", run_id)
    return match.group(1) if match else "—"


def _counts(meta: dict[str, Any]) -> str:
    counts = meta.get("counts")
    if isinstance(counts, dict):
        return ", ".join(f"{k} {v}" for k, v in counts.items())
    return "—"


def _run_list(runs: Runs) -> str:
    ids = runs.ids()
    rows = []
    for run_id in ids:
        meta = runs.meta(run_id)
        code = meta.get("exit_code")
        kind = (
            "pass"
            if code == 0
            else "fail"
            if code == 1
            else "error"
            if code is not None
            else "other"
        )
        suites = meta.get("suites")
        suites_text = (
            ", ".join(map(str, suites)) if isinstance(suites, list) else str(suites or "—")
        )
        rows.append(
            f'<tr><td><a href="/runs/{e(run_id)}">{e(run_id)}</a></td>'
            f"<td>{e(_kind(run_id, meta))}</td>"
            f"<td>{e(meta.get('started') or '—')}</td><td>{e(meta.get('model') or '—')}</td>"
            f'<td class="wrap">{e(suites_text)}</td><td class="wrap">{e(_counts(meta))}</td>'
            f'<td><span class="badge b-{kind}">exit {e("—" if code is None else code)}</span>'
            "</td></tr>"
        )
    where = runs.single or runs.root
    if not rows:
        table = (
            f"<p>No runs in <code>{e(where)}</code> yet. <code>toolproof run</code> and "
            "<code>toolproof replay</code> keep a log of each run there.</p>"
        )
    else:
        table = (
            '<table class="runs"><thead><tr><th scope="col">run</th><th scope="col">kind</th>'
            '<th scope="col">started</th><th scope="col">model</th><th scope="col">suites</th>'
            '<th scope="col">counts</th><th scope="col">result</th></tr></thead>'
            f"<tbody>{''.join(rows)}</tbody></table>"
        )
    body = (
        f'<header class="top"><h1>toolproof runs</h1><p class="muted">{e(where)} · '
        f"{len(rows)} run{'s' if len(rows) != 1 else ''}</p></header>{table}"
        f"{_compare_form(ids, '', '')}"
    )
    return page("toolproof runs", body, nav=_NAV)


def _compare_form(ids: list[str], a: str, b: str) -> str:
    if len(ids) < 2:
        return ""

    def options(selected: str) -> str:
        return "".join(
            f'<option value="{e(i)}"{" selected" if i == selected else ""}>{e(i)}</option>'
            for i in ids
        )

    return (
        '<h2>Compare two runs</h2><form class="traces-form" action="/compare" method="get">'
        f'<label>before<select name="a">{options(a or ids[min(1, len(ids) - 1)])}</select></label>'
        f'<label>after<select name="b">{options(b or ids[0])}</select></label>'
        "<button type=submit>compare</button></form>"
    )


def _outcomes(data: dict[str, Any]) -> dict[str, tuple[str, str]]:
    """Case (or sample) id -> (verdict, detail) of an eval or replay report."""
    out: dict[str, tuple[str, str]] = {}
    for case in data.get("cases") or []:
        trials = case.get("trials") or []
        passed = sum(1 for t in trials if t.get("status") == "pass")
        out[str(case.get("id"))] = (str(case.get("verdict")), f"{passed}/{len(trials)} trials")
    for result in data.get("results") or []:
        findings = result.get("findings") or [{}]
        out[str(result.get("trace_id"))] = (
            str(result.get("grade")),
            str(findings[0].get("message", "")),
        )
    return out


_GOOD = {"pass"}


def _change(a: tuple[str, str] | None, b: tuple[str, str] | None) -> str:
    if a is None:
        return "new"
    if b is None:
        return "gone"
    if a[0] == b[0]:
        return "same" if a[1] == b[1] else "changed"
    if a[0] in _GOOD and b[0] not in _GOOD:
        return "regressed"
    if a[0] not in _GOOD and b[0] in _GOOD:
        return "fixed"
    return "changed"


def _paired_section(first: dict[str, Any], second: dict[str, Any]) -> str:
    """The paired verdict (regressed, improved, no evidence) with its figures, escaped."""
    from toolproof._paired import comparison_lines, paired

    comparison = paired(first, second)
    if comparison is None:
        return '<p id="cmp-verdict">No case has a verdict in both runs: nothing to compare.</p>'
    kind = {"regressed": "fail", "improved": "pass"}.get(comparison.change, "other")
    items = "".join(f"<li>{e(line)}</li>" for line in comparison_lines(comparison))
    return (
        f'<section id="cmp-verdict"><h2><span class="badge b-{kind}">{e(comparison.change)}'
        f"</span> paired comparison</h2><ul>{items}</ul></section>"
    )


def _compare(runs: Runs, a: str, b: str) -> tuple[int, str]:
    ids = runs.ids()
    if not a or not b:
        body = '<header class="top"><h1>Compare runs</h1></header>'
        form = _compare_form(ids, a, b)
        return 200, page("compare runs", body + (form or "<p>Two runs are needed.</p>"), nav=_NAV)
    first, second = runs.load(a), runs.load(b)
    if first is None or second is None:
        missing = a if first is None else b
        return 404, page("not found", f"<h1>No run {e(missing)}</h1>", nav=_NAV)
    old, new = _outcomes(first), _outcomes(second)
    anchors = {
        run: {str(c.get("id")): n for n, c in enumerate(data.get("cases") or [])}
        for run, data in ((a, first), (b, second))
    }
    order = {"regressed": 0, "gone": 1, "new": 2, "changed": 3, "fixed": 4, "same": 5}
    rows = []
    tally: dict[str, int] = {}
    for key in sorted(
        set(old) | set(new), key=lambda k: (order[_change(old.get(k), new.get(k))], k)
    ):
        change = _change(old.get(key), new.get(key))
        tally[change] = tally.get(change, 0) + 1
        before, after = old.get(key), new.get(key)
        kind = {"regressed": "fail", "fixed": "pass", "same": "other"}.get(change, "warn")

        def cell(x: tuple[str, str] | None, run: str, key: str = key) -> str:
            if x is None:
                return '<td class="gap">—</td>'
            where = anchors[run].get(key)
            link = f' <a href="/runs/{e(run)}#case-{where}">open</a>' if where is not None else ""
            return f'<td><span class="badge b-{e(x[0])}">{e(x[0])}</span> {e(x[1])}{link}</td>'

        rows.append(
            f'<tr class="cmp-{e(change)}"><td><span class="badge b-{kind}">{e(change)}</span></td>'
            f'<td class="wrap"><code>{e(key)}</code></td>{cell(before, a)}{cell(after, b)}</tr>'
        )
    summary = " · ".join(f"{n} {k}" for k, n in sorted(tally.items(), key=lambda i: order[i[0]]))
    body = (
        f'<header class="top"><h1>Compare runs</h1><p class="muted">before <a href="/runs/{e(a)}">'
        f'{e(a)}</a> · after <a href="/runs/{e(b)}">{e(b)}</a></p></header>'
        f"{_paired_section(first, second)}"
        f'<p id="cmp-summary">{e(summary)}</p>'
        '<table class="cmp"><thead><tr><th scope="col">change</th><th scope="col">case</th>'
        '<th scope="col">before</th><th scope="col">after</th></tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table>{_compare_form(ids, a, b)}"
    )
    return 200, page("compare runs", body, nav=_NAV)


_STATUSES = ("ok", "failed", "final", "max_steps", "budget", "repeated_call", "cancelled", "error")


def _traces(store_path: str, query: Any) -> tuple[int, str]:
    from toolproof.errors import UserError
    from toolproof.replay import TraceFilter
    from toolproof.replay._store import TraceStore

    def values(name: str) -> list[str]:
        return [v for raw in query.getall(name, []) for v in raw.split(",") if v.strip()]

    params = {k: query.get(k, "").strip() for k in ("since", "until", "model", "status", "limit")}
    tools, tags, ids = values("tool"), values("tag"), values("id")
    status_options = "".join(
        f"<option{' selected' if params['status'] == s else ''}>{e(s)}</option>" for s in _STATUSES
    )
    form = (
        '<form class="traces-form" action="/traces" method="get" role="search">'
        f'<label>since<input name="since" value="{e(params["since"])}" placeholder="7d"></label>'
        f'<label>until<input name="until" value="{e(params["until"])}" '
        'placeholder="2026-01-31"></label>'
        f'<label>tool<input name="tool" value="{e(",".join(tools))}"></label>'
        f'<label>model<input name="model" value="{e(params["model"])}" '
        'placeholder="openai:*"></label>'
        f'<label>tag<input name="tag" value="{e(",".join(tags))}"></label>'
        '<label>status<select name="status"><option value="">any</option>'
        f"{status_options}</select></label>"
        f'<label>id<input name="id" value="{e(",".join(ids))}"></label>'
        f'<label>limit<input name="limit" value="{e(params["limit"] or "200")}" size="5"></label>'
        "<button type=submit>filter</button></form>"
    )
    head = f'<header class="top"><h1>Trace store</h1><p class="muted">{e(store_path)}</p></header>'
    try:
        limit = int(params["limit"] or 200)
    except ValueError:
        return 400, page(
            "traces", head + form + "<p class=err>limit: give a whole number</p>", nav=_NAV
        )
    flt = TraceFilter(
        since=params["since"] or None,
        until=params["until"] or None,
        tools=tools,
        model=params["model"] or None,
        tags=tags,
        status=params["status"] or None,
        ids=ids,
        limit=limit,
    )
    try:
        with TraceStore(store_path, create=False) as store:
            rows = store.rows(flt, check=True)
            total = store.count(flt) - len(store.skipped)
    except UserError as exc:
        return 400, page("traces", head + form + f'<p class="err">{e(exc)}</p>', nav=_NAV)
    lines = []
    for row in rows:
        tools_text = ", ".join(f"{n}×{c}" if c > 1 else n for n, c in row.tools.items())
        kind = "pass" if row.status == "final" else "fail"
        lines.append(
            f'<tr><td><a href="/traces/{e(row.id)}"><code>{e(row.id[:12])}</code></a></td>'
            f"<td>{e(row.started_at or '—')}</td><td>{e(row.model)}</td>"
            f'<td><span class="badge b-{kind}">{e(row.status)}</span></td>'
            f'<td class="wrap">{e(tools_text or "—")}</td>'
            f'<td class="wrap">{e(", ".join(row.tags) or "—")}</td>'
            f'<td class="wrap">{e(row.input)}</td></tr>'
        )
    shown = f"{len(rows)} of {total} traces" if total > len(rows) else f"{len(rows)} traces"
    table = (
        f'<p class="muted" id="trace-count">{e(shown)}</p><table class="runs"><thead><tr>'
        '<th scope="col">id</th><th scope="col">started</th><th scope="col">model</th>'
        '<th scope="col">status</th><th scope="col">tools</th><th scope="col">tags</th>'
        f'<th scope="col">input</th></tr></thead><tbody>{"".join(lines)}</tbody></table>'
    )
    return 200, page("traces", head + form + table, nav=_NAV)


def _trace(store_path: str, trace_id: str) -> tuple[int, str]:
    from toolproof.errors import UserError
    from toolproof.replay._store import TraceStore

    if not TRACE_ID.match(trace_id):
        return 404, page("not found", "<h1>No such trace</h1>", nav=_NAV)
    try:
        with TraceStore(store_path, create=False) as store:
            data = json.loads(store.get_json(trace_id))
    except UserError as exc:
        return 404, page(
            "not found", f'<h1>No such trace</h1><p class="err">{e(exc)}</p>', nav=_NAV
        )
    return 200, render_trace_page(data, nav=_NAV)


def make_app(
    runs: Runs, store_path: str, *, allowed_hosts: set[str] | None = None
) -> web.Application:
    """The viewer's aiohttp application.

    Args:
        runs: Where the runs are.
        store_path: The trace store (it may not exist yet).
        allowed_hosts: ``Host`` header values accepted (``None``: any); requests from web
            pages of other sites are refused either way.
    """
    from aiohttp import web

    from toolproof.server._local import refusal

    def respond(status: int, text: str) -> web.Response:
        return web.Response(status=status, text=text, content_type="text/html", charset="utf-8")

    @web.middleware
    async def guard(request: web.Request, handler: Any) -> web.StreamResponse:
        if request.method not in ("GET", "HEAD"):
            return web.Response(status=405, text="the viewer only reads")
        refused = refusal(request.host, request.headers.get("Origin"), allowed_hosts)
        if refused is not None:
            return web.Response(status=refused[0], text=refused[1])
        response: web.StreamResponse = await handler(request)
        response.headers.update(_HEADERS)
        return response

    async def index(request: web.Request) -> web.Response:
        return respond(200, _run_list(runs))

    async def run_page(request: web.Request) -> web.Response:
        text = runs.page(request.match_info["run"])
        if text is None:
            return respond(404, page("not found", "<h1>No such run</h1>", nav=_NAV))
        return respond(200, text)

    async def run_json(request: web.Request) -> web.StreamResponse:
        path = runs.report_path(request.match_info["run"])
        if path is None:
            return respond(404, page("not found", "<h1>No such run</h1>", nav=_NAV))
        return web.FileResponse(path, headers={"Content-Type": "application/json"})

    async def compare(request: web.Request) -> web.Response:
        return respond(*_compare(runs, request.query.get("a", ""), request.query.get("b", "")))

    async def traces(request: web.Request) -> web.Response:
        return respond(*_traces(store_path, request.query))

    async def trace(request: web.Request) -> web.Response:
        return respond(*_trace(store_path, request.match_info["trace"]))

    async def not_found(request: web.Request) -> web.Response:
        return respond(404, page("not found", "<h1>Not found</h1>", nav=_NAV))

    app = web.Application(middlewares=[guard])
    app.router.add_get("/", index)
    app.router.add_get("/runs/{run}", run_page)
    app.router.add_get("/runs/{run}/report.json", run_json)
    app.router.add_get("/compare", compare)
    app.router.add_get("/traces", traces)
    app.router.add_get("/traces/{trace}", trace)
    app.router.add_get("/{tail:.*}", not_found)
    return app
