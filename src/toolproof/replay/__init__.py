"""Record and replay: trace store, redaction, replay grading, release gate.

Record production runs with ``Agent(..., recorder=Recorder())``; replay them after every
model, prompt or tool change with :func:`replay` (or ``toolproof replay``), which grades
each sample pass / warn / fail and gates the release on the failure rate.

Example:
    ```python
    from toolproof.replay import Recorder, replay

    agent = Agent(model, tools, recorder=Recorder(".toolproof/traces.db"))
    ...
    report = replay(".toolproof/traces.db", mode="tools", tools=TOOLS, gate=0.05)
    assert report.gate_passed, report.render_text()
    ```
"""

TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import ModuleType

    from toolproof.replay._grading import Finding, SampleResult
    from toolproof.replay._recorder import Recorder
    from toolproof.replay._redact import FieldRule, PatternRule, Redactor
    from toolproof.replay._replay import ReplayModel, areplay, mock_from_trace, replay
    from toolproof.replay._report import ReplayReport
    from toolproof.replay._rules import Aging, ReplayRules
    from toolproof.replay._schema_check import SchemaRejections, count_schema_rejections
    from toolproof.replay._store import TraceFilter, TraceStore
del TYPE_CHECKING  # (not a name of the package)

# Each name is bound from its module on first use: a command that only redacts (the
# reports of ``toolproof run``) does not load the store, SQLite or the replay engine.
_HOMES = {
    "Finding": "_grading",
    "SampleResult": "_grading",
    "Recorder": "_recorder",
    "FieldRule": "_redact",
    "PatternRule": "_redact",
    "Redactor": "_redact",
    "ReplayModel": "_replay",
    "areplay": "_replay",
    "mock_from_trace": "_replay",
    "replay": "_replay",
    "ReplayReport": "_report",
    "Aging": "_rules",
    "ReplayRules": "_rules",
    "SchemaRejections": "_schema_check",
    "count_schema_rejections": "_schema_check",
    "TraceFilter": "_store",
    "TraceStore": "_store",
}


def __getattr__(name: str) -> object:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(_load(home), name)
    globals()[name] = value
    return value


def _load(home: str) -> "ModuleType":  # plain import statements, so the layer checks see them
    if home == "_grading":
        from toolproof.replay import _grading

        return _grading
    if home == "_recorder":
        from toolproof.replay import _recorder

        return _recorder
    if home == "_redact":
        from toolproof.replay import _redact

        return _redact
    if home == "_replay":
        from toolproof.replay import _replay

        return _replay
    if home == "_report":
        from toolproof.replay import _report

        return _report
    if home == "_rules":
        from toolproof.replay import _rules

        return _rules
    if home == "_schema_check":
        from toolproof.replay import _schema_check

        return _schema_check
    from toolproof.replay import _store

    return _store


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


__all__ = [
    "Aging",
    "FieldRule",
    "Finding",
    "PatternRule",
    "Recorder",
    "Redactor",
    "ReplayModel",
    "ReplayReport",
    "ReplayRules",
    "SampleResult",
    "SchemaRejections",
    "TraceFilter",
    "TraceStore",
    "areplay",
    "count_schema_rejections",
    "mock_from_trace",
    "replay",
]
