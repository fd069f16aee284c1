"""The replay report: counts, raw and weighted failure rates, the gate, and its formats.

Formats: a console summary (text), JSON (everything), JUnit XML (one test case per sample:
fails are failures, infrastructure problems are errors, warns pass with their findings in
``system-out``) and Markdown for pull-request comments (the failures, then the spot-check
list of warns). In model mode, JUnit and Markdown also show the transcript of each failing
sample's new run, clipped (model output is untrusted: escaped by the XML library, and
HTML-escaped in Markdown).

The JSON report (``format: toolproof-replay-report``, ``version: 1``) is also the run log's
``report.json``, which always carries each sample's new trace (``new_trace``, model mode).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from toolproof._reporting import (
    JUnitCase,
    JUnitSuite,
    ReportSpec,
    md_code,
    md_details,
    md_escape,
    md_pre,
    md_table,
    md_truncate,
    open_output,
    printable,
    transcript_text,
    write_junit,
)
from toolproof._stats_text import gate_line, interval_dict, show
from toolproof._text import clip
from toolproof.replay._grading import Finding, SampleResult
from toolproof.replay._rules import Aging

if TYPE_CHECKING:
    from toolproof._statistics import GateDecision, Interval

__all__ = [
    "MARKDOWN_MARKER",
    "REPORT_FORMAT",
    "REPORT_VERSION",
    "ReplayReport",
    "replay_data",
    "write_replay_html",
]

REPORT_FORMAT = "toolproof-replay-report"
#: Version of the JSON report. Bump it when a field is removed or changes meaning.
REPORT_VERSION = 1
#: Failing samples whose transcript JUnit and Markdown show.
TRANSCRIPT_SAMPLES = 20

#: First line of the Markdown report: CI finds (and updates) its earlier comment by it
#: (the eval report's is ``<!-- toolproof-evals -->``, so both comments can live side by side).
MARKDOWN_MARKER = "<!-- toolproof-replay -->"

#: Exit codes of ``toolproof replay``, the same as ``toolproof run``'s (docs/replay.md).
EXIT_OK, EXIT_GATE, EXIT_INFRA, EXIT_NOTHING_RAN, EXIT_UNDECIDED = 0, 1, 3, 5, 6


@dataclass(slots=True)
class ReplayReport:
    """The outcome of a replay.

    Attributes:
        mode: ``"tools"`` or ``"model"``.
        samples: One result per replayed sample.
        gate: The failure rate above which the replay fails (``None``: any failure fails).
        aging: The aging settings used.
        expired: Samples older than ``aging.max_age``, not replayed.
        started_at: When the replay started (ISO-8601 UTC).
        duration_s: Wall time of the replay.
        source: Where the samples came from (the store path).
        new_model: The model answering in model mode.
        real_tools: Tools that ran their real code on purpose (every other tool was mocked
            or, in tools mode, not run).
        gate_mode: ``advisory`` (the default: fail only when the failure rate is clearly
            above the gate) or ``release`` (pass only when it is clearly below).
        level: Confidence level of the failure rate's interval.
        interval: ``wilson`` or ``clopper-pearson`` (weighted rates always use Wilson's).
    """

    mode: str
    samples: list[SampleResult] = field(default_factory=list)
    gate: float | None = None
    aging: Aging = field(default_factory=Aging)
    expired: int = 0
    started_at: str = ""
    duration_s: float = 0.0
    source: str | None = None
    new_model: str | None = None
    real_tools: list[str] = field(default_factory=list)
    gate_mode: Literal["advisory", "release"] = "advisory"
    level: float = 0.95
    interval: Literal["wilson", "clopper-pearson"] = "wilson"

    # -- figures -----------------------------------------------------------------------------

    @property
    def counts(self) -> dict[str, int]:
        """Samples per grade."""
        out = {"pass": 0, "warn": 0, "fail": 0, "error": 0}
        for sample in self.samples:
            out[sample.grade] += 1
        return out

    @property
    def graded(self) -> list[SampleResult]:
        """Samples with a verdict (everything but infrastructure errors)."""
        return [s for s in self.samples if s.grade != "error"]

    @property
    def failures(self) -> list[SampleResult]:
        """The failed samples."""
        return [s for s in self.samples if s.grade == "fail"]

    @property
    def spot_check(self) -> list[SampleResult]:
        """The warned samples: worth a human look, they do not block."""
        return [s for s in self.samples if s.grade == "warn"]

    @property
    def errors(self) -> list[SampleResult]:
        """Samples that could not be graded (the model provider failed...)."""
        return [s for s in self.samples if s.grade == "error"]

    @property
    def fail_rate(self) -> float:
        """Failed samples over graded samples (0 when nothing was graded)."""
        graded = self.graded
        return len(self.failures) / len(graded) if graded else 0.0

    @property
    def weighted_fail_rate(self) -> float:
        """The failure rate with each sample weighted by its age."""
        total = sum(s.weight for s in self.graded)
        if total <= 0:
            return 0.0
        return sum(s.weight for s in self.failures) / total

    @property
    def gate_rate(self) -> float:
        """The rate the gate compares: weighted when samples age, raw otherwise."""
        return self.weighted_fail_rate if self.aging.half_life else self.fail_rate

    def rate_interval(self) -> Interval | None:
        """The gate's failure rate with its interval (``None`` when nothing was graded)."""
        from toolproof._statistics import binomial_interval, weighted_rate_interval

        graded = self.graded
        if not graded:
            return None
        if self.aging.half_life and sum(s.weight for s in graded) > 0:
            weights = [s.weight for s in graded]
            failed = [s.grade == "fail" for s in graded]
            return weighted_rate_interval(weights, failed, level=self.level)
        return binomial_interval(
            len(self.failures), len(graded), level=self.level, method=self.interval
        )

    def decision(self) -> GateDecision | None:
        """The gate's decision: pass, fail or undecided (``None`` when nothing was graded).

        Read from the failure rate's interval: ``fail`` when its low bound is above the gate,
        ``pass`` when its high bound is below, ``undecided`` between (with the samples that
        would decide). Without a gate (or a gate of 0) no failure is acceptable: any failure
        fails and none passes, whatever the mode (no interval shows a rate below 0).
        """
        from toolproof._statistics import GateDecision, gate

        interval = self.rate_interval()
        if interval is None:
            return None
        if not self.gate:
            failed = bool(self.failures)
            verdict: Literal["pass", "fail"] = "fail" if failed else "pass"
            return GateDecision(verdict, failed, self.gate_mode, 0.0, interval, None, None)
        return gate(interval, self.gate, mode=self.gate_mode)

    @property
    def gate_passed(self) -> bool:
        """Whether the gate lets the replay through (it did not fail, nor block undecided)."""
        decision = self.decision()
        return decision is None or not decision.blocks

    @property
    def exit_code(self) -> int:
        """The exit code of ``toolproof replay`` (the same table as ``toolproof run``'s).

        0 the gate passed (or is undecided in advisory mode); 1 it failed; 3 the model
        provider failed and left samples ungraded; 5 no sample was replayed; 6 the gate is
        undecided in release mode (too few samples to show the rate below the gate).
        """
        decision = self.decision()
        if decision is not None and decision.verdict == "fail":
            return EXIT_GATE
        if self.errors:
            return EXIT_INFRA
        if not self.samples:
            return EXIT_NOTHING_RAN
        if decision is not None and decision.blocks:
            return EXIT_UNDECIDED
        return EXIT_OK

    def gate_sentence(self) -> str:
        """The gate's verdict in one sentence: which bound decided, or what would."""
        decision = self.decision()
        if decision is None:
            return "gate: nothing graded"
        return gate_line(decision)

    # -- formats -----------------------------------------------------------------------------

    def to_dict(self, *, traces: bool = False, interrupted: bool = False) -> dict[str, Any]:
        """Everything, as plain data (the JSON report).

        Args:
            traces: Also each sample's new trace (``new_trace``, model mode), as the run
                log keeps it.
            interrupted: The replay was stopped before every sample ran.
        """
        from toolproof._version import __version__

        counts = self.counts
        results = []
        for sample in self.samples:
            entry = sample.to_dict()
            if traces and sample.new_trace is not None:
                entry["new_trace"] = sample.new_trace.to_dict()
            results.append(entry)
        return {
            "format": REPORT_FORMAT,
            "version": REPORT_VERSION,
            "toolproof": __version__,
            "interrupted": interrupted,
            "exit_code": self.exit_code,
            "mode": self.mode,
            "source": self.source,
            "new_model": self.new_model,
            "real_tools": list(self.real_tools),
            "started_at": self.started_at,
            "duration_s": round(self.duration_s, 3),
            "samples": len(self.samples),
            "counts": counts,
            "expired": self.expired,
            "fail_rate": round(self.fail_rate, 6),
            "weighted_fail_rate": round(self.weighted_fail_rate, 6),
            "aging": self.aging.describe(),
            "gate": self._gate_dict(),
            "spot_check": [s.trace_id for s in self.spot_check],
            "results": results,
        }

    def _gate_dict(self) -> dict[str, Any]:
        decision = self.decision()
        return {
            "threshold": 0.0 if self.gate is None else self.gate,
            "rate": round(self.gate_rate, 6),
            "passed": self.gate_passed,
            "mode": self.gate_mode,
            "verdict": None if decision is None else decision.verdict,
            "bound": None if decision is None else decision.bound,
            "needed": None if decision is None else decision.needed,
            "interval": None if decision is None else interval_dict(decision.interval),
        }

    def to_json(self, *, indent: int | None = 2, traces: bool = False) -> str:
        """The JSON report (with each sample's new trace when ``traces``)."""
        return json.dumps(
            self.to_dict(traces=traces), indent=indent, ensure_ascii=False, default=str
        )

    def transcript(self, sample: SampleResult) -> str:
        """The clipped transcript of a sample's new run (model mode), or ``""``."""
        if sample.new_trace is None:
            return ""
        return transcript_text([sample.new_trace.to_dict()], indent="  ")

    def summary(self) -> str:
        """One line: counts, rates and the gate's verdict."""
        c = self.counts
        weighted = f" (weighted {self.weighted_fail_rate:.1%})" if self.aging.half_life else ""
        threshold = "0" if self.gate is None else f"{self.gate:.1%}"
        decision = self.decision()
        verdict = "PASSED" if self.gate_passed else "FAILED"
        if decision is not None and decision.verdict == "undecided":
            verdict = "UNDECIDED" + ("" if decision.blocks else " (advisory: not blocking)")
        if not self.samples:
            verdict = "nothing replayed"
        extra = f", {self.expired} expired" if self.expired else ""
        errors = f", {c['error']} error" if c["error"] else ""
        real = f"; real tools: {', '.join(self.real_tools)}" if self.real_tools else ""
        return (
            f"replay ({self.mode}): {len(self.samples)} samples: {c['pass']} pass, "
            f"{c['warn']} warn, {c['fail']} fail{errors}{extra}; failure rate "
            f"{self.fail_rate:.1%}{weighted}; gate {threshold}: {verdict}{real}"
        )

    def render_text(self, *, max_samples: int = 20) -> str:
        """The console report: failures with their findings side by side, then warns."""
        lines: list[str] = []
        for title, samples in (
            ("FAIL", self.failures),
            ("ERROR", self.errors),
            ("WARN (spot check)", self.spot_check),
        ):
            if not samples:
                continue
            lines.append(f"{title}: {len(samples)}")
            for sample in samples[:max_samples]:
                lines.append(f"  {sample.trace_id}  {clip(sample.input, 70)!r}")
                for finding in sample.findings:
                    lines.append(f"    [{finding.grade}] {finding.check}: {finding.message}")
                    if finding.recorded is not None or finding.new is not None:
                        lines.append(f"        recorded: {_show(finding.recorded)}")
                        lines.append(f"        new:      {_show(finding.new)}")
            if len(samples) > max_samples:
                lines.append(f"  ... and {len(samples) - max_samples} more (see the JSON report)")
        lines.append(self.summary())
        lines.append(self.gate_sentence())
        # Recorded and new outputs are untrusted: no escape sequence reaches the terminal.
        return printable("\n".join(lines))

    def junit_suites(self) -> list[JUnitSuite]:
        """One suite, one case per sample."""
        suite = JUnitSuite(name=f"toolproof replay ({self.mode})", timestamp=self.started_at)
        decision = self.decision()
        if decision is not None:
            suite.properties = {
                "failure_rate": show(decision.interval),
                "interval": f"{100 * self.level:g}% {decision.interval.method}",
                "gate": self.gate_sentence(),
            }
        real = f"real tools: {', '.join(self.real_tools)}" if self.real_tools else ""
        shown = {id(sample) for sample in self.failures[:TRANSCRIPT_SAMPLES]}
        for sample in self.samples:
            text = _findings_text(sample.findings)
            case = JUnitCase(
                name=f"{sample.trace_id} {clip(sample.input, 60)}".strip(),
                classname=f"replay.{self.mode}",
                time_s=sample.duration_ms / 1000,
            )
            transcript = self.transcript(sample) if id(sample) in shown else ""
            if transcript:
                case.system_out = f"transcript of the new run:\n{transcript}"
            if sample.grade == "fail":
                case.failure = text
            elif sample.grade == "error":
                case.error = text
            elif sample.grade == "warn":
                case.system_out = "WARN (spot check)\n" + text
            if real:
                case.system_out = f"{case.system_out}\n{real}" if case.system_out else real
            suite.cases.append(case)
        return [suite]

    def render_markdown(self, *, max_samples: int = 50) -> str:
        """A Markdown report for pull-request comments and job summaries."""
        c = self.counts
        decision = self.decision()
        verdict = "✅ passed" if self.gate_passed else "❌ failed"
        if decision is not None and decision.verdict == "undecided":
            verdict = "⚠️ undecided" + ("" if decision.blocks else " (advisory: not blocking)")
        if self.gate_passed and self.errors:
            verdict = "⚠️ undecided (the model could not be reached)"
        elif not self.samples:
            verdict = "⏭️ nothing replayed"
        threshold = "0 (any failure)" if self.gate is None else f"{self.gate:.1%}"
        parts = [
            MARKDOWN_MARKER,
            f"## toolproof replay ({self.mode}): gate {verdict}",
            "",
            md_table(
                [
                    "samples",
                    "pass",
                    "warn",
                    "fail",
                    "error",
                    "expired",
                    "failure rate",
                    "interval",
                    "weighted",
                    "gate",
                ],
                [
                    [
                        str(len(self.samples)),
                        str(c["pass"]),
                        str(c["warn"]),
                        str(c["fail"]),
                        str(c["error"]),
                        str(self.expired),
                        f"{self.fail_rate:.1%}",
                        _interval_text(decision),
                        f"{self.weighted_fail_rate:.1%}",
                        threshold,
                    ]
                ],
            ),
        ]
        parts += ["", md_escape(self.gate_sentence())]
        if self.real_tools:
            parts += ["", "real tools: " + ", ".join(md_code(n) for n in self.real_tools)]
        if self.failures:
            parts += ["", "### Failures", ""]
            parts.append(_md_findings(self.failures[:max_samples]))
            if len(self.failures) > max_samples:
                parts.append(f"\n… and {len(self.failures) - max_samples} more failures.")
            for sample in self.failures[: min(max_samples, TRANSCRIPT_SAMPLES)]:
                transcript = self.transcript(sample)
                if transcript:
                    parts += [
                        "",
                        md_details(
                            f"{sample.trace_id[:12]}: transcript of the new run",
                            md_pre(clip(transcript, 4000, flatten=False)),
                        ),
                    ]
        if self.errors:
            parts += ["", "### Not graded (errors)", ""]
            parts.append(_md_findings(self.errors[:max_samples]))
        if self.spot_check:
            parts += [
                "",
                md_details(
                    f"Spot check: {len(self.spot_check)} warned samples",
                    _md_findings(self.spot_check[:max_samples]),
                ),
            ]
        return md_truncate("\n".join(parts) + "\n")

    def write(self, spec: ReportSpec, *, traces: bool = False) -> None:
        """Write one report (``json``, ``junit``, ``markdown`` or ``html``) where ``spec`` says.

        With ``traces``, the JSON report carries each sample's new trace.
        """
        if spec.format == "junit":
            write_junit(spec.path, self.junit_suites())
            return
        if spec.format == "html":
            write_replay_html(spec.path, self)
            return
        with open_output(spec.path) as out:
            if spec.format == "json":
                out.write(self.to_json(traces=traces) + "\n")
            else:
                out.write(self.render_markdown())


def _interval_text(decision: GateDecision | None) -> str:
    if decision is None:
        return "-"
    iv = decision.interval
    return f"{iv.low:.1%}–{iv.high:.1%} ({100 * iv.level:g}% {iv.method})"


def _findings_text(findings: list[Finding]) -> str:
    lines = []
    for finding in findings:
        lines.append(f"[{finding.grade}] {finding.check}: {finding.message}")
        if finding.recorded is not None or finding.new is not None:
            lines.append(f"    recorded: {_show(finding.recorded)}")
            lines.append(f"    new:      {_show(finding.new)}")
    return "\n".join(lines)


def _md_findings(samples: list[SampleResult]) -> str:
    rows = []
    for sample in samples:
        for finding in sample.findings:
            rows.append(
                [
                    md_code(sample.trace_id[:12]),
                    md_escape(sample.input, limit=60),
                    finding.grade,
                    md_escape(finding.message, limit=160),
                    md_escape(_show(finding.recorded), limit=100),
                    md_escape(_show(finding.new), limit=100),
                ]
            )
    return md_table(["trace", "input", "grade", "why", "recorded", "new"], rows)


def _show(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


def replay_data(report: ReplayReport) -> dict[str, Any]:
    """The replay report's JSON data with each warn and fail sample's traces added.

    The new run's trace comes from the sample (model mode); the recorded one from the store
    the samples came from, when it can still be read.
    """
    data = report.to_dict()
    wanted = {s.trace_id for s in report.samples if s.grade in ("warn", "fail")}
    recorded: dict[str, dict[str, Any]] = {}
    if wanted and report.source:
        try:
            from toolproof.replay._store import TraceStore

            with TraceStore(report.source, create=False) as store:
                for trace_id in wanted:
                    try:
                        recorded[trace_id] = json.loads(store.get_json(trace_id))
                    except Exception:
                        continue
        except Exception:
            recorded = {}
    for sample, out in zip(report.samples, data["results"], strict=True):
        if sample.trace_id in recorded:
            out["recorded_trace"] = recorded[sample.trace_id]
        if sample.new_trace is not None and sample.grade in ("warn", "fail"):
            out["new_trace"] = sample.new_trace.to_dict()
    return data


def write_replay_html(path: str, report: ReplayReport) -> None:
    """Write the HTML report of a replay: counts, the gate, findings and side-by-side diffs."""
    from toolproof.replay._html import render_replay

    text = render_replay(replay_data(report))
    with open_output(path) as out:
        out.write(text)
