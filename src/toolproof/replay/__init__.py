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

from toolproof.replay._grading import Finding, SampleResult
from toolproof.replay._recorder import Recorder
from toolproof.replay._redact import FieldRule, PatternRule, Redactor
from toolproof.replay._replay import ReplayModel, areplay, mock_from_trace, replay
from toolproof.replay._report import ReplayReport
from toolproof.replay._rules import Aging, ReplayRules
from toolproof.replay._schema_check import SchemaRejections, count_schema_rejections
from toolproof.replay._store import TraceFilter, TraceStore

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
