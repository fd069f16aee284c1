"""Record and replay: trace store, redaction, replay grading, release gate."""

from toolproof.replay._recorder import Recorder, RecorderStats
from toolproof.replay._redact import FieldRule, PatternRule, Redactor
from toolproof.replay._store import DEFAULT_STORE_PATH, StoreRow, TraceFilter, TraceStore

__all__ = [
    "DEFAULT_STORE_PATH",
    "FieldRule",
    "PatternRule",
    "Recorder",
    "RecorderStats",
    "Redactor",
    "StoreRow",
    "TraceFilter",
    "TraceStore",
]
