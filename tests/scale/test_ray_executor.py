"""The Ray executor on a real local cluster: the same reports as in-process runs, workers that
die (retried, then reported as errors of their items), and Ctrl-C cancelling remote work."""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from toolproof._executor import LocalExecutor, RayExecutor, Work, executor_from_string
from toolproof.errors import MockBypassed, UserError
from toolproof.replay import TraceStore, replay

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "replay"))  # replay_helpers, here and on the workers


async def double(context: int, item: int) -> int:
    return item * context


async def die_on(context: str, item: int) -> int:
    """Kills its worker process on the item 13; the marker file makes it die only once."""
    if item == 13:
        marker = Path(context)
        if not _exists(marker) or _read(marker) == "always":
            if not _exists(marker):
                _write(marker, "once")
            os._exit(1)
    return item


def _exists(path: Path) -> bool:
    return path.exists()


def _read(path: Path) -> str:
    return path.read_text()


def _write(path: Path, text: str) -> None:
    path.write_text(text)


def lost(item: int, error: BaseException) -> int:
    return -1


def results(executor: Any, work: Work[Any, int, int], items: list[int]) -> dict[int, int]:
    async def main() -> dict[int, int]:
        return {index: result async for index, result in executor.stream(work, items)}

    return asyncio.run(main())


def test_every_item_comes_back_once_with_its_index(ray_cluster: Any) -> None:
    items = list(range(500))
    work = Work(3, double, lost, concurrency=8)
    remote = results(RayExecutor(batch_size=37), work, items)
    assert remote == results(LocalExecutor(), work, items) == {n: 3 * n for n in items}


def test_a_worker_that_dies_once_is_retried(ray_cluster: Any, tmp_path: Path) -> None:
    marker = tmp_path / "died"
    work = Work(str(marker), die_on, lost)
    got = results(RayExecutor(batch_size=10), work, list(range(40)))
    assert marker.read_text() == "once"  # it did die
    assert got == {n: n for n in range(40)}  # and nothing was lost


def test_a_worker_that_keeps_dying_is_reported_for_its_items_only(
    ray_cluster: Any, tmp_path: Path
) -> None:
    marker = tmp_path / "died"
    marker.write_text("always")
    work = Work(str(marker), die_on, lost)
    got = results(RayExecutor(batch_size=10, retries=1), work, list(range(40)))
    assert {n for n, r in got.items() if r == -1} == set(range(10, 20))  # the batch of 13
    assert all(got[n] == n for n in range(40) if not 10 <= n < 20)


def _append(path: str) -> None:
    with open(path, "a") as out:
        out.write(".")


async def heartbeat(context: str, item: int) -> int:
    for _ in range(600):
        _append(context)
        await asyncio.sleep(0.1)
    return item


@pytest.mark.timeout(180)
def test_cancelling_the_run_cancels_the_remote_work(ray_cluster: Any, tmp_path: Path) -> None:
    beats = tmp_path / "beats"
    beats.write_text("")
    work = Work(str(beats), heartbeat, lost)

    async def main() -> None:
        stream = RayExecutor(batch_size=1).stream(work, [1, 2])

        async def consume() -> None:
            async for _ in stream:
                pass

        task = asyncio.ensure_future(consume())
        deadline = time.monotonic() + 60
        while len(_read(beats)) < 5 and time.monotonic() < deadline:  # noqa: ASYNC110
            await asyncio.sleep(0.1)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await stream.aclose()

    asyncio.run(main())
    time.sleep(1.5)  # a cancelled worker stops beating
    size = len(beats.read_text())
    time.sleep(1.5)
    assert len(beats.read_text()) == size


def test_replay_on_ray_gives_the_local_report(ray_cluster: Any, tmp_path: Path) -> None:
    from replay_helpers import query_users, user_trace

    path = tmp_path / "traces.db"
    with TraceStore(path) as store:
        store.add_many([user_trace(n) for n in range(300)])
        store._exec(
            "INSERT INTO traces (id, ts, payload, format_version) VALUES ('bad', 1, ?, 1)",
            (b"garbage{",),
        )
    local = replay(path, tools=[query_users])
    remote = replay(path, tools=[query_users], executor="ray")
    assert [s.to_dict() for s in remote.samples] == [
        {**s.to_dict(), "duration_ms": r.to_dict()["duration_ms"]}
        for s, r in zip(local.samples, remote.samples, strict=True)
    ]
    assert remote.counts == local.counts == {"pass": 300, "warn": 0, "fail": 0, "error": 0}
    assert remote.source == local.source == str(path)


def test_replay_on_ray_warns_about_each_unreadable_row(
    ray_cluster: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from replay_helpers import query_users, user_trace

    path = tmp_path / "traces.db"
    with TraceStore(path) as store:
        good = user_trace(1)
        store.add(good)
        store._exec(
            "INSERT INTO traces (id, ts, payload, format_version) VALUES ('bad-row', 2, ?, 1)",
            (b"garbage{",),
        )
    with caplog.at_level(logging.WARNING, logger="toolproof.replay"):
        report = replay(path, tools=[query_users], executor=RayExecutor())
    assert [s.trace_id for s in report.samples] == [good.id]
    warnings = [r.getMessage() for r in caplog.records if r.name == "toolproof.replay"]
    assert len(warnings) == 1
    assert warnings[0].startswith("stored trace bad-row cannot be decoded")


def test_model_mode_replay_on_ray(ray_cluster: Any) -> None:
    from replay_helpers import query_users, run_trace

    from toolproof import Agent
    from toolproof.testing import call

    traces = [
        run_trace([call("query_users", user_id=n), f"User {n} found."], input=f"user {n}?")
        for n in range(20)
    ]

    def factory(model: Any, tools: Any) -> Agent:
        return Agent(model, tools or [query_users])

    local = replay(traces, mode="model", agent=factory, model="recorded")
    remote = replay(traces, mode="model", agent=factory, model="recorded", executor="ray")
    assert [(s.trace_id, s.grade) for s in remote.samples] == [
        (s.trace_id, s.grade) for s in local.samples
    ]
    assert remote.counts["pass"] == 20


def test_an_eval_run_on_ray_gives_the_local_verdicts(ray_cluster: Any, tmp_path: Path) -> None:
    from toolproof.evals._runner import evaluate

    suite = ROOT / "examples" / "support" / "support.eval.yaml"
    local = evaluate([suite], model="scripted")
    remote = evaluate(
        [suite], model="scripted", executor="ray", reports=[f"json:{tmp_path}/r.json"]
    )
    assert [(c.case.name, c.verdict, c.reason) for c in remote.cases] == [
        (c.case.name, c.verdict, c.reason) for c in local.cases
    ]
    assert remote.exit_code == local.exit_code == 0
    assert (tmp_path / "r.json").stat().st_size > 0


def test_an_eval_trial_whose_worker_keeps_dying_is_an_error_of_its_case(
    ray_cluster: Any, tmp_path: Path
) -> None:
    import dying_agent

    from toolproof.evals._runner import evaluate

    suite = tmp_path / "dying.eval.yaml"
    suite.write_text(
        "suite: dying\n"
        "agent: dying_agent:build_agent\n"
        "model: scripted\n"
        "cases:\n"
        "  - name: dies\n"
        "    input: hello\n"
        "    script: [hi]\n"
    )
    dying_agent.MARK.write_text(str(os.getpid()))
    try:
        executor = RayExecutor(retries=1)
        report = evaluate([suite], model="scripted", executor=executor, trials=2)
    finally:
        dying_agent.MARK.unlink()
    (case,) = report.cases
    assert case.verdict == "error", case
    assert {t.error_type for t in case.trials} == {"WorkerLost"}
    assert all("the worker running the trial was lost" in (t.error or "") for t in case.trials)


def test_unknown_executors_say_what_exists() -> None:
    with pytest.raises(UserError) as info:
        executor_from_string("dask")
    assert str(info.value) == (
        "unknown executor 'dask'; use 'local' (the default), 'ray' (a local Ray cluster) "
        "or 'ray:ADDRESS' (e.g. ray:auto, ray:ray://head:10001)"
    )
    assert isinstance(executor_from_string(None), LocalExecutor)
    assert executor_from_string("ray:auto").address == "auto"  # type: ignore[attr-defined]


def test_a_run_that_cannot_be_sent_to_workers_is_one_clear_error(ray_cluster: Any) -> None:
    import threading

    work = Work(threading.Lock(), double, lost)  # a lock cannot go to another process
    with pytest.raises(UserError) as info:
        results(RayExecutor(), work, [1, 2])
    assert str(info.value).startswith("cannot send the run to Ray workers: TypeError: ")
    assert "must be picklable" in str(info.value)


def test_the_cli_refuses_unknown_executors_with_exit_2(tmp_path: Path) -> None:
    import subprocess

    from replay_helpers import user_trace

    with TraceStore(tmp_path / "traces.db") as store:
        store.add(user_trace(1))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}
    suite = str(ROOT / "examples" / "support" / "support.eval.yaml")
    commands = [
        ["run", suite, "--model", "scripted", "-q", "--executor", "dask"],
        ["replay", "--store", str(tmp_path / "traces.db"), "--schemas", str(tmp_path / "s.json"),
         "--executor", "dask"],
    ]  # fmt: skip
    (tmp_path / "s.json").write_text("[]")
    for argv in commands:
        done = subprocess.run(
            [sys.executable, "-m", "toolproof", *argv],
            capture_output=True,
            text=True,
            env=env,
            cwd=tmp_path,
            timeout=120,
            check=False,
        )
        assert done.returncode == 2, done
        assert done.stderr.strip() == (
            "toolproof: error: unknown executor 'dask'; use 'local' (the default), 'ray' (a "
            "local Ray cluster) or 'ray:ADDRESS' (e.g. ray:auto, ray:ray://head:10001)"
        )


async def refuse(context: int, item: int) -> int:
    if item == 7:
        raise MockBypassed("the real code of 'delete_user' was about to run")
    return item


def test_an_error_escaping_the_work_stops_the_run_as_it_does_locally(ray_cluster: Any) -> None:
    work = Work(0, refuse, lost)
    for executor in (LocalExecutor(), RayExecutor(batch_size=4)):
        with pytest.raises(MockBypassed, match="the real code of 'delete_user'"):
            results(executor, work, list(range(20)))
