"""Work budget of ``toolproof run`` around the trials: counted, not timed.

Loading a suite checks every case, but the settings a case inherits from its suite unchanged
are checked once for the suite, not once per case. While the trials run, the garbage
collector walks its youngest generation far less often than Python's default (the trials
allocate many short-lived objects and almost no cyclic garbage), and what start-up built is
left out of its walks; both are undone when the command ends.
"""

from __future__ import annotations

import gc
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from toolproof.cli import _run as cli_run
from toolproof.cli import main
from toolproof.evals import _suite
from toolproof.evals._suite import load_suite

HERE = Path(__file__).resolve().parent


@pytest.fixture
def validations(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """How many times each suite model validates a mapping during a load."""
    counts: Counter[str] = Counter()
    real = _suite.validate

    def counted(model: Any, *args: Any, **kwargs: Any) -> Any:
        counts[model.__name__] += 1
        return real(model, *args, **kwargs)

    monkeypatch.setattr(_suite, "validate", counted)
    return counts


def _suite_file(tmp_path: Path, cases: list[str], head: str = "") -> Path:
    path = tmp_path / "work.eval.yaml"
    lines = ["suite: work", "agent: evalagents:build_agent", "model: scripted", "trials: 2"]
    lines += [head] if head else []
    lines += ["cases:", *(f"  - {case}" for case in cases)]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_inherited_settings_are_checked_once_per_suite_not_once_per_case(
    tmp_path: Path, validations: Counter[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(HERE))
    cases = [f"{{name: c{i}, input: 'hi {i}', script: [hello]}}" for i in range(40)]
    cases[7] = "{name: own, input: hi, trials: 3, script: [hello]}"
    suite = load_suite(_suite_file(tmp_path, cases))
    assert len(suite.cases) == 40
    assert validations == Counter(SuiteFile=1, CaseEntry=40, CaseSettings=2), validations
    own = suite.cases[7]
    others = [case for case in suite.cases if case is not own]
    assert own.config.trials == 3
    assert {case.config.trials for case in others} == {2}
    # One checked object for every case that inherits, not a copy per case.
    assert len({id(case.config) for case in others}) == 1
    assert own.config is not others[0].config


def test_a_problem_in_an_inherited_setting_is_reported_once_at_the_suite_line(
    tmp_path: Path, validations: Counter[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Nothing is reused after a problem: every case checks again, and the problem is
    # reported once, at the line where the suite set it.
    monkeypatch.syspath_prepend(str(HERE))
    cases = [f"{{name: c{i}, input: hi}}" for i in range(5)]
    path = _suite_file(tmp_path, cases, head="retries: -1")
    with pytest.raises(Exception) as raised:
        load_suite(path)
    problems = getattr(raised.value, "problems", None)
    assert problems == [f"{path}:5: retries: expected a non-negative integer, got -1"]
    assert validations["CaseSettings"] == 5, validations


def test_a_case_that_overrides_nothing_still_has_its_own_problems_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The shared settings never hide a case's own mistakes (here: a script for a tool the
    # agent does not have, and an unknown key), whichever case comes first.
    monkeypatch.syspath_prepend(str(HERE))
    cases = [
        "{name: fine, input: hi, script: [hello]}",
        "{name: bad, input: hi, script: [{call: {name: no_such_tool, arguments: {}}}]}",
        "{name: typo, input: hi, exepct: {}}",
    ]
    with pytest.raises(Exception) as raised:
        load_suite(_suite_file(tmp_path, cases))
    problems = "\n".join(getattr(raised.value, "problems", None) or [])
    assert "no_such_tool" in problems
    assert "unknown key 'exepct'" in problems


def test_the_run_collects_its_youngest_generation_less_often_and_undoes_it_after(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.syspath_prepend(str(HERE))
    cases = [f"{{name: c{i}, input: 'hi {i}', script: [hello]}}" for i in range(150)]
    path = _suite_file(tmp_path, cases)
    report = tmp_path / "r.json"
    threshold, frozen = gc.get_threshold(), gc.get_freeze_count()
    during: list[tuple[tuple[int, int, int], int]] = []
    real = cli_run._run

    async def trials(*args: Any, **kwargs: Any) -> Any:
        during.append((gc.get_threshold(), gc.get_freeze_count()))
        return await real(*args, **kwargs)

    monkeypatch.setattr(cli_run, "_run", trials)
    code = main(["run", str(path), "-q", "--no-log", "--report", f"json:{report}"])
    assert code == 0, capsys.readouterr()
    assert json.loads(report.read_text())["summary"]["trials_passed"] == 300
    ((running, frozen_running),) = during
    # Python's default is 700; a run keeps the older generations' thresholds.
    assert running == (cli_run.YOUNG_GENERATION_THRESHOLD, *threshold[1:])
    assert running[0] >= 10_000
    assert gc.isenabled()
    # What start-up built (modules, the suite) is out of the collector's walks.
    assert frozen_running > frozen + 10_000, (frozen_running, frozen)
    assert gc.get_threshold() == threshold
    assert gc.get_freeze_count() == frozen


def test_a_run_that_fails_to_load_restores_the_collector(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    threshold, frozen = gc.get_threshold(), gc.get_freeze_count()
    bad = tmp_path / "bad.eval.yaml"
    bad.write_text("suite: bad\ncases: 3\n")
    assert main(["run", str(bad), "-q", "--no-log"]) == 2
    assert "invalid eval suite" in capsys.readouterr().err
    assert gc.get_threshold() == threshold
    assert gc.get_freeze_count() == frozen


#: Libraries and modules a large scripted run that passes never needs: no HTTP client for a
#: scripted model, no run log with --no-log, no table when every case passed (more than 40
#: cases show only the totals), no store, replay, server or viewer.
NOT_LOADED_BY_A_SCRIPTED_RUN = (
    "aiohttp",
    "yarl",
    "multidict",
    "jsonschema",
    "sqlite3",
    "rich.table",
    "toolproof._runlog",
    "toolproof.models.openai",
    "toolproof.evals._cache",
    # (the redactor of the reports loads; the store, recorder and replay engine do not)
    "toolproof.replay._store",
    "toolproof.replay._recorder",
    "toolproof.replay._replay",
    "toolproof.server",
    "toolproof.view",
    "toolproof.evals._dataset",
    # `toolproof run` parses with its own subcommand alone.
    "toolproof.cli._chat",
    "toolproof.cli._mcp",
    "toolproof.cli._mocks",
    "toolproof.cli._replay",
    "toolproof.cli._runs",
    "toolproof.cli._schema",
    "toolproof.cli._serve",
    "toolproof.cli._traces",
    "toolproof.cli._view",
)


def test_a_scripted_run_loads_no_http_client_run_log_or_table(tmp_path: Path) -> None:
    cases = [f"{{name: c{i}, input: 'hi {i}', script: [hello]}}" for i in range(50)]
    path = _suite_file(tmp_path, cases)
    report = tmp_path / "r.json"
    code = (
        "import json, sys\n"
        "from toolproof.cli import main\n"
        f"code = main(['run', {str(path)!r}, '-q', '--no-log', '--report', 'json:{report}'])\n"
        "print(json.dumps([code, sorted(sys.modules)]))\n"
    )
    done = _python(code, tmp_path)
    exit_code, loaded = json.loads(done.stdout.splitlines()[-1])
    assert exit_code == 0, done.stdout
    assert json.loads(report.read_text())["summary"]["trials_passed"] == 100
    found = [
        name
        for name in NOT_LOADED_BY_A_SCRIPTED_RUN
        if any(m == name or m.startswith(name + ".") for m in loaded)
    ]
    assert found == [], f"loaded by a scripted run that needs none of them: {found}"


def test_each_trial_is_encoded_once_for_the_reports(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # A trial's head and each of its traces are encoded once, into the spool; every report
    # (here JSON and Markdown) copies or reads them back, none encodes them again.
    from toolproof import _trace
    from toolproof.evals import _runner

    monkeypatch.syspath_prepend(str(HERE))
    cases = [f"{{name: c{i}, input: 'hi {i}', script: [hello]}}" for i in range(30)]
    path = _suite_file(tmp_path, cases)
    counts: Counter[str] = Counter()
    adapter = _trace._adapter()

    class CountingAdapter:
        def dump_json(self, value: Any, **kwargs: Any) -> bytes:
            counts["trace_encodes"] += 1
            return adapter.dump_json(value, **kwargs)

        def __getattr__(self, name: str) -> Any:
            return getattr(adapter, name)

    real_line = _runner._Runner.spool_line

    def spool_line(self: Any, trial: Any) -> bytes:
        counts["spooled_trials"] += 1
        counts["traces"] += len(trial.traces or [])
        return real_line(self, trial)

    monkeypatch.setattr(_trace, "_adapter", lambda: CountingAdapter())
    monkeypatch.setattr(_runner._Runner, "spool_line", spool_line)
    out, markdown = tmp_path / "r.json", tmp_path / "r.md"
    argv = ["run", str(path), "-q", "--no-log", "--report", f"json:{out}"]
    code = main([*argv, "--report", f"markdown:{markdown}"])
    assert code == 0, capsys.readouterr()
    data = json.loads(out.read_text())
    assert data["summary"]["trials"] == 60
    written = sum(len(t["traces"]) for c in data["cases"] for t in c["trials"])
    assert counts == Counter(spooled_trials=60, traces=written, trace_encodes=written), counts


def test_the_program_leaves_its_objects_out_of_the_collectors_walks_at_exit(
    tmp_path: Path,
) -> None:
    # As the program (no argv: the console script, `python -m toolproof`) the command's
    # objects are frozen before the interpreter exits, which would otherwise walk them all
    # with the collector; called with argv (from Python, as tests do) nothing stays frozen.
    cases = [f"{{name: c{i}, input: 'hi {i}', script: [hello]}}" for i in range(20)]
    path = _suite_file(tmp_path, cases)
    argv = ["run", str(path), "-q", "--no-log"]
    code = (
        "import gc, json, sys\n"
        "from toolproof.cli import main\n"
        f"called = main({argv!r})\n"
        "after_call = gc.get_freeze_count()\n"
        f"sys.argv = ['toolproof', *{argv!r}]\n"
        "program = main()\n"
        "print(json.dumps([called, after_call, program, gc.get_freeze_count()]))\n"
    )
    done = _python(code, tmp_path)
    called, after_call, program, frozen = json.loads(done.stdout.splitlines()[-1])
    assert (called, program) == (0, 0), done.stdout
    assert after_call == 0
    assert frozen > 10_000


def _python(code: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh interpreter on this checkout's sources (and the test agents)."""
    source = Path(__file__).resolve().parents[2] / "src"
    return subprocess.run(
        [sys.executable, "-c", code],
        env={"PYTHONPATH": f"{source}:{HERE}", "PATH": ""},
        capture_output=True,
        text=True,
        check=True,
        cwd=cwd,
    )


def test_the_report_codec_is_built_while_every_first_trial_waits_for_the_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The trace codec of the JSON spool is built once, when every worker's trial is waiting
    # for a model answer (the loop is idle then), before any trial has ended.
    import asyncio

    from toolproof.evals import _runner
    from toolproof.evals._runner import evaluate_async
    from toolproof.testing import FunctionModel, call

    monkeypatch.syspath_prepend(str(HERE))
    waiting = 0
    seen: list[tuple[int, int]] = []

    async def respond(messages: Any, info: Any) -> Any:
        nonlocal waiting
        waiting += 1
        try:
            await asyncio.sleep(0.02)
        finally:
            waiting -= 1
        if messages[-1].role == "tool":
            return "The result is 96."
        return call("multiply_numbers", a=12, b=8)

    done: list[int] = []
    real_line = _runner._Runner.spool_line

    def spool_line(self: Any, trial: Any) -> bytes:
        done.append(trial.index)
        return real_line(self, trial)

    def warm() -> None:
        seen.append((waiting, len(done)))

    monkeypatch.setattr(_runner, "_warm_spool", warm)
    monkeypatch.setattr(_runner._Runner, "spool_line", spool_line)
    cases = [f"{{name: c{i}, input: 'hi {i}'}}" for i in range(12)]
    path = _suite_file(tmp_path, cases)
    report = asyncio.run(
        evaluate_async(
            [path],
            model=FunctionModel(respond),
            concurrency=5,
            cache=False,
            reports=[f"json:{tmp_path / 'r.json'}"],
        )
    )
    assert report.exit_code == 0, [c.reason for c in report.cases]
    assert len(done) == 24
    # Once; every one of the 5 workers was in a model request, and no trial had ended.
    assert seen == [(5, 0)]
