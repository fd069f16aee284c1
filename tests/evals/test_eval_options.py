"""``evaluate``'s options are one value, ``EvalOptions``; its keywords are a front over it.

Every option reaches the run, whichever way it is given (a value, keywords, or a value with
keywords over it); a keyword that is not an option is refused before anything runs, naming
it and the option meant; each option is documented once, on ``EvalOptions``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import re
from collections.abc import Iterator
from fnmatch import fnmatch
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from _cli import run_cli
from _shared import ROOT
from toolproof.errors import UserError
from toolproof.evals import Case, EvalOptions, EvalReport, evaluate, evaluate_async, load_suite
from toolproof.evals._runner import evaluate_async as runner_evaluate_async
from toolproof.testing import FunctionModel

HR = ROOT / "examples" / "hr_assistant" / "hr.eval.yaml"
NAMES = [field.name for field in dataclasses.fields(EvalOptions)]
SUITE_TRIALS = 3  # the HR suite's own ``trials:``
HR_CASES = load_suite(HR).cases


def outcome(report: EvalReport) -> dict[str, Any]:
    """What a run decided, without its timings: each case and trial, and the totals."""
    return {
        "cases": [
            (
                c.case.id,
                c.verdict,
                [(t.index, t.status, [r.label for r in t.failed_checks]) for t in c.trials],
            )
            for c in report.cases
        ],
        "exit_code": report.exit_code,
        "model_calls": report.model_calls,
        "statistics": report.statistics,
    }


def run_or_error(**keywords: Any) -> Any:
    """The run's outcome, or the message of the error refusing its options."""
    try:
        return outcome(evaluate(HR, **keywords))
    except UserError as exc:
        return f"UserError: {exc}"


# -- every option reaches the run -----------------------------------------------------------


def test_a_run_reads_every_option(tmp_path: Path) -> None:
    # An option added to EvalOptions but never read by the run fails here.
    read: set[str] = set()

    class Reading(EvalOptions):
        def __getattribute__(self, name: str) -> Any:
            if name in NAMES:
                read.add(name)
            return super().__getattribute__(name)

    options = Reading(
        model=FunctionModel(lambda messages, info: "I cannot tell.", name="guesser"),
        cache_dir=tmp_path / "cache",
        reports=[f"json:{tmp_path / 'r.json'}"],
        trials=1,
    )
    report = evaluate(HR, options)
    assert report.cases and report.exit_code == 1  # it ran: the guesser fails the checks
    assert (tmp_path / "r.json").is_file()
    assert sorted(set(NAMES) - read) == []


def test_every_option_is_taken_as_a_keyword() -> None:
    import inspect

    for front in (evaluate, evaluate_async):
        parameters = inspect.signature(front).parameters
        assert list(parameters) == ["suites", "options", "keywords"]
        assert parameters["keywords"].kind is inspect.Parameter.VAR_KEYWORD
    assert evaluate_async is runner_evaluate_async
    base = EvalOptions(model="scripted", cache=False, trials=1, tags=["smoke"])
    expected = outcome(evaluate(HR, base))
    assert expected["cases"] and expected["exit_code"] == 0
    # each field as a keyword, with the value it has: accepted, and the run is the same
    for name in NAMES:
        assert outcome(evaluate(HR, base, **{name: getattr(base, name)})) == expected, name
    assert outcome(evaluate(HR, **{name: getattr(base, name) for name in NAMES})) == expected


@settings(max_examples=30)
@given(
    trials=st.sampled_from([None, 1, 2, 3]),
    concurrency=st.integers(1, 8),
    tags=st.lists(st.sampled_from(["leave", "smoke", "nothing-has-it"]), unique=True),
    cases=st.sampled_from([(), ("leave*",), ("hr-assistant::multiply", "*chinese")]),
)
def test_options_as_a_value_as_keywords_or_both_run_the_same(
    trials: int | None, concurrency: int, tags: list[str], cases: tuple[str, ...]
) -> None:
    chosen = {"trials": trials, "concurrency": concurrency, "tags": tags, "cases": cases}
    as_keywords = run_or_error(model="scripted", cache=False, **chosen)
    as_value = run_or_error(options=EvalOptions(model="scripted", cache=False, **chosen))
    # A value whose fields the keywords override: the keywords win (None included).
    other = EvalOptions(
        model="scripted",
        cache=False,
        trials=2 if trials != 2 else None,
        concurrency=9 - concurrency,
        tags=["nothing-has-it"],
        cases=("nothing::matches",),
    )
    overridden = run_or_error(options=other, **chosen)
    assert as_value == as_keywords
    assert overridden == as_keywords
    if isinstance(as_keywords, str):  # a selection matching nothing: refused the same way
        assert as_keywords.startswith("UserError: no case matches"), as_keywords
        assert not [c for c in HR_CASES if selected(c, tags, cases)]
        return
    assert [case_id for case_id, _, _ in as_keywords["cases"]] == [
        c.id for c in HR_CASES if selected(c, tags, cases)
    ]
    for case_id, _verdict, trial_list in as_keywords["cases"]:
        assert len(trial_list) == (trials or SUITE_TRIALS), case_id


def selected(case: Case, tags: list[str], cases: tuple[str, ...]) -> bool:
    """Whether ``case`` is one the ``tags`` and ``cases`` filters select (as documented)."""
    by_name = not cases or any(fnmatch(case.name, p) or fnmatch(case.id, p) for p in cases)
    return by_name and (not tags or bool(set(tags) & set(case.tags)))


def test_a_value_is_kept_as_given_and_reused(tmp_path: Path) -> None:
    base = EvalOptions(model="scripted", cache=False, trials=1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        base.trials = 2  # type: ignore[misc]
    twice = evaluate(HR, base, trials=2)
    once = evaluate(HR, base)
    assert base.trials == 1
    assert {len(c.trials) for c in twice.cases} == {2}
    assert {len(c.trials) for c in once.cases} == {1}
    # suites and options as keywords too, as before
    again = evaluate(suites=str(HR), options=base)
    assert outcome(again) == outcome(once)


async def test_the_async_front_takes_the_same_forms() -> None:
    base = EvalOptions(model="scripted", cache=False)
    by_value = await evaluate_async(HR, dataclasses.replace(base, trials=1, tags=["smoke"]))
    by_keywords = await evaluate_async(HR, model="scripted", cache=False, trials=1, tags=["smoke"])
    by_both = await evaluate_async(HR, base, trials=1, tags=["smoke"])
    assert outcome(by_value) == outcome(by_keywords) == outcome(by_both)
    assert by_value.cases and all(len(c.trials) == 1 for c in by_value.cases)


def test_the_command_line_runs_what_the_same_options_run_from_python(tmp_path: Path) -> None:
    report_path = tmp_path / "r.json"
    result = run_cli(
        "run",
        str(HR),
        "--model",
        "scripted",
        "--no-cache",
        "--trials",
        "2",
        "--tag",
        "leave",
        "--concurrency",
        "3",
        "--no-log",
        "-q",
        "--report",
        f"json:{report_path}",
        cwd=tmp_path,
        env={**os.environ, "NO_COLOR": "1"},
        paths=[ROOT],
    )
    assert result.returncode == 0, result.stderr
    written = json.loads(report_path.read_text())
    from_python = evaluate(
        HR, EvalOptions(model="scripted", cache=False, trials=2, tags=["leave"], concurrency=3)
    )
    assert [(c["id"], c["verdict"], len(c["trials"])) for c in written["cases"]] == [
        (c.case.id, c.verdict, len(c.trials)) for c in from_python.cases
    ]
    assert from_python.cases and {len(c.trials) for c in from_python.cases} == {2}


# -- a keyword that is not an option ---------------------------------------------------------


def typos() -> Iterator[tuple[str, str]]:
    """Every option name with one letter left out, doubled, or swapped with the next."""
    for name in NAMES:
        for i in range(len(name)):
            edits = {name[:i] + name[i + 1 :], name[:i] + name[i] + name[i:]}
            if i + 1 < len(name):
                edits.add(name[:i] + name[i + 1] + name[i] + name[i + 2 :])
            for typo in sorted(edits - set(NAMES)):
                yield name, typo


def test_every_one_letter_typo_of_an_option_is_refused_with_the_option_meant(
    tmp_path: Path,
) -> None:
    report = tmp_path / "r.json"
    wrong = []
    checked = 0
    for meant, typo in typos():
        with pytest.raises(TypeError) as raised:
            evaluate(HR, model="scripted", reports=[f"json:{report}"], **{typo: 1})
        message = str(raised.value)
        checked += 1
        if f"unexpected keyword argument {typo!r} (did you mean {meant!r}?)" not in message:
            wrong.append((typo, message))
    assert checked > 700
    assert wrong == []
    assert not report.exists()  # refused before anything ran


@settings(max_examples=60)
@given(
    name=st.text(min_size=1, max_size=30).filter(lambda s: s not in NAMES and s != "suites"),
    given_value=st.booleans(),
    asynchronous=st.booleans(),
)
def test_any_other_keyword_is_refused_by_name_before_the_run(
    name: str, given_value: bool, asynchronous: bool
) -> None:
    options = EvalOptions(model="scripted") if given_value else None
    keywords: dict[str, Any] = {name: "x"}
    if not given_value:
        keywords["model"] = "scripted"

    def run() -> object:
        if asynchronous:
            return asyncio.run(evaluate_async(HR, options, **keywords))
        return evaluate(HR, options, **keywords)

    with pytest.raises(TypeError) as raised:
        run()
    message = str(raised.value)
    assert message.startswith(f"unexpected keyword argument {name!r}")
    assert message.endswith(
        "the options of evaluate() and evaluate_async() are the fields of EvalOptions"
    )
    suggestion = re.search(r"\(did you mean '([^']*)'\?\)", message)
    assert suggestion is None or suggestion.group(1) in NAMES


@pytest.mark.parametrize("wrong", [{"model": "scripted"}, ["scripted"], "scripted", 3])
def test_options_that_are_not_an_eval_options_are_refused(wrong: Any) -> None:
    with pytest.raises(
        TypeError, match=rf"options must be an EvalOptions .*not {type(wrong).__name__}$"
    ):
        evaluate(HR, wrong)


# -- one place documents each option ----------------------------------------------------------


def test_each_option_is_documented_once_on_eval_options() -> None:
    doc = EvalOptions.__doc__ or ""
    attributes = doc.split("Attributes:", 1)[1]
    documented = re.findall(r"^        (\w+): ", attributes, flags=re.MULTILINE)
    assert documented == NAMES
    for front in (evaluate, evaluate_async):
        text = front.__doc__ or ""
        assert "EvalOptions" in text
        listed = [n for n in NAMES if re.search(rf"^\s+{n}: ", text, flags=re.MULTILINE)]
        assert listed == [], f"{front.__name__} documents options EvalOptions documents"
