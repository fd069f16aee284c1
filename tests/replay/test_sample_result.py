"""A replayed sample's result: graded by its findings, the recorded side from its trace.

Tools mode (a decoded trace or the stored data read as is), model mode and a sample that
failed to replay build their results in one place. Generated findings of every grade, in
any order, and recorded fields of any text give the worst grade and the recorded run's
input, model and answer, from a full trace and from its stored form alike.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from toolproof._trace import Trace
from toolproof.replay._grading import Finding, sample_result
from toolproof.replay._recorded import RecordedTrace

GRADES = st.lists(st.sampled_from(["warn", "fail", "error"]), max_size=6)
TEXT = st.text(max_size=30)


def worst(grades: list[str]) -> str:
    for grade in ("error", "fail", "warn"):
        if grade in grades:
            return grade
    return "pass"


@given(GRADES, TEXT, TEXT, TEXT, st.none() | TEXT, st.none() | st.lists(TEXT, max_size=3))
def test_a_sample_is_graded_by_its_worst_finding_with_its_recorded_side(
    grades: list[str],
    trace_id: str,
    user_input: str,
    model: str,
    output: str | None,
    notes: list[str] | None,
) -> None:
    trace = Trace(id=trace_id, input=user_input, model=model, output=output)
    for source in (trace, RecordedTrace(trace.to_dict())):
        findings = [Finding(grade, "check", f"finding {i}") for i, grade in enumerate(grades)]
        result = sample_result(source, findings, notes)
        assert result.grade == worst(grades)
        assert result.findings == findings
        assert (result.trace_id, result.input) == (trace.id, trace.input)
        assert (result.recorded_model, result.recorded_output) == (trace.model, trace.output)
        assert result.notes == (notes or [])
        assert result.new_model is None and result.new_trace is None
        data = result.to_dict()
        assert data["grade"] == worst(grades) and "new_model" not in data
