"""The eval runner: cases x trials on asyncio workers, with retries, caching and rate limits.

One trial: fresh mocks (so stateful mocks never leak between trials), the agent's toolset in
the suite's mode, a fresh agent from the factory, every user turn in one session, then the
objective checks and, when they pass, the judge. A run that stops on an error of the model
provider (unreachable, 429/5xx, missing key) is an *infrastructure error*: the trial is
retried with backoff and, if it still fails, reported as an error, never as a failure of the
agent. Finished trials are streamed to a spool file for the JSON report, so memory stays
flat however many cases run.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import tempfile
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from toolproof._agent import Runnable, Session
from toolproof._reporting import ReportSpec, check_output, parse_report_specs, utf8
from toolproof._thread_loop import blocking
from toolproof._toolset import Exited, contained
from toolproof.errors import (
    AgentRunError,
    MockBypassed,
    ModelError,
    UserError,
)
from toolproof.evals._checks import (
    CHECK_TIMEOUT,
    Check,
    CheckResult,
    SessionRecord,
    check_timeout,
    run_check,
)
from toolproof.evals._costs import (
    CostGates,
    baseline_cases,
    case_entries,
    estimate_cost,
    run_costs,
    strictest,
)
from toolproof.evals._options import EvalOptions, chosen_options
from toolproof.evals._results import (
    CaseResult,
    EvalReport,
    TrialResult,
    describe_errors,
    describe_failures,
    describe_faults,
)
from toolproof.evals._stats_report import StatsOptions
from toolproof.evals._suite import Case, Suite, select_cases
from toolproof.evals._users import Conversation, conversation_checks, converse
from toolproof.models._base import Model

if TYPE_CHECKING:
    from toolproof._executor import Executor
    from toolproof._trace import Trace
    from toolproof.evals._cache import ResponseCache
    from toolproof.evals._progress import Progress
    from toolproof.replay._store import TraceStore

__all__ = ["evaluate", "evaluate_async"]

from toolproof.evals._plan import CasePlan, answers_locally, as_suites, plan_cases, runs_scripted
from toolproof.evals._plan import RunOptions as PlanOptions
from toolproof.evals._plan import graded as _graded
from toolproof.evals._trial_models import (
    SCRIPTED,
    Counters,
    Infra,
    LimitedModel,
    MappingMocks,
    Metered,
    Slot,
    TrialModel,
    Waiting,
    trial_tools,
)
from toolproof.evals._trial_models import infrastructure_error as infrastructure_error


class _Runner:
    def __init__(
        self,
        plans: list[CasePlan],
        options: PlanOptions,
        *,
        cache: ResponseCache | None,
        progress: Progress,
        spool: IO[bytes] | None,
    ) -> None:
        self.plans = plans
        self.options = options
        self.cache = cache
        self.progress = progress
        self.spool = spool
        self.model_calls = 0
        self.cached_calls = 0
        self.judge_calls = 0
        self.stopped = False
        #: Set when the user's code raised KeyboardInterrupt: the run stops as on Ctrl-C.
        self.interrupted = False
        self.workers: list[asyncio.Task[None]] = []
        # The JSON report is assembled while the trials run: each finished trial's line
        # waits here (by plan) until its case is decided, then the case's whole entry of
        # the report is written to the spool at once (``blocks``: where, by case result),
        # so writing the report at the end only copies them.
        self.lines: dict[int, list[bytes | None]] = {}
        self.blocks: dict[int, tuple[int, int]] = {}
        self.spool_error: str | None = None
        self.record_error: str | None = None  # why --record stopped keeping traces
        self.waiting: Waiting | None = None

    # -- the run --------------------------------------------------------------------------------

    async def run(self) -> bool:
        """Run every planned trial; returns whether the run was interrupted."""
        units = [
            (plan, index) for plan in self.plans if plan.remaining for index in range(plan.trials)
        ]
        if any(plan.case.config.until == "decided" for plan in self.plans):
            # In waves: every case's first trial, then every second one..., so a case whose
            # verdict is known after a few trials starts no more of them.
            units.sort(key=lambda unit: unit[1])
        self.progress.start(len(self.plans), len(units))
        for plan in self.plans:
            if plan.result is not None:
                self.progress.case_done(plan.result)
        if self.options.executor is not None:
            return await self.run_elsewhere(units, self.options.executor)
        queue = iter(units)
        count = max(1, min(self.options.concurrency, len(units)))
        # The trace codec the spool needs is built while every first trial waits for its
        # model's first answer, not when the first trial ends (with the answers arriving).
        self.waiting = Waiting(count, _warm_spool if self.spool is not None else None)

        async def worker() -> None:
            for plan, index in queue:
                if self.stopped:
                    return
                if plan.decided is not None:  # its verdict is known: the trial is not needed
                    self.settle(plan)
                    continue
                trial = await self.trial(plan, index)
                self.record(plan, trial)

        self.workers = workers = [asyncio.ensure_future(worker()) for _ in range(count)]
        try:
            if workers:
                await asyncio.gather(*workers)
        except asyncio.CancelledError:
            for task in workers:
                task.cancel()
            await asyncio.gather(*workers, return_exceptions=True)
            return self.interrupted or not self.stopped
        except BaseException:
            for task in workers:
                task.cancel()
            await asyncio.gather(*workers, return_exceptions=True)
            raise
        return False

    async def run_elsewhere(self, units: list[tuple[CasePlan, int]], executor: Executor) -> bool:
        """Run the trials on another executor (Ray); results are recorded here as they come."""
        from toolproof._executor import Work

        options = PlanOptions(
            keep_traces=True,  # the spool and the report are written here
            retry_backoff=self.options.retry_backoff,
            retry_backoff_max=self.options.retry_backoff_max,
        )
        work = Work(options, _remote_trial, _lost_trial, self.options.concurrency)
        try:
            async with contextlib.aclosing(executor.stream(work, units)) as results:
                async for number, (trial, judge_calls) in results:
                    plan = units[number][0]
                    self.judge_calls += judge_calls
                    _redact_trial(trial, self.options.redactor)
                    self.store_traces(plan, trial)
                    if self.spool is not None:
                        self.hold(plan, trial)
                    if not self.options.keep_traces:
                        trial.traces = None
                    self.record(plan, trial)
        except asyncio.CancelledError:
            return True
        return False

    def store_traces(self, plan: CasePlan, trial: TrialResult) -> None:
        """Keep the trial's (redacted) traces in the record store, with the run and verdict.

        Written before the next trial starts, so an interrupted run keeps what finished.
        """
        store = self.options.record
        if store is None or not trial.traces or self.record_error is not None:
            return
        case = plan.case
        verdict = {
            "run": self.options.run_id,
            "case_id": case.id,
            "status": trial.status,
            "failed_checks": [c.label for c in trial.failed_checks],
        }
        for trace in trial.traces:
            eval_info = trace.metadata.get("eval")
            trace.metadata["eval"] = {
                **(eval_info if isinstance(eval_info, dict) else {}),
                **verdict,
            }
            if "eval" not in trace.tags:
                trace.tags = [*trace.tags, "eval"]
        try:
            store.add_many(trial.traces)
        except Exception as exc:  # (a full disk, a store gone): the run goes on, and says so
            self.record_error = (
                f"traces of the trials not recorded from {trial.traces[0].id} on: "
                f"{type(exc).__name__}: {exc}"
            )

    def record(self, plan: CasePlan, trial: TrialResult) -> None:
        plan.results[trial.index] = trial
        self.model_calls += trial.model_calls
        self.cached_calls += trial.cached_calls
        self.progress.trial_done(plan.case, trial)
        if plan.case.config.until == "decided" and plan.decided is None:
            plan.decided = _sequential(plan, self.options.statistics.level)
        self.settle(plan)
        if self.options.exitfirst and not self.stopped and self.decided_failure(plan):
            self.stop()

    def settle(self, plan: CasePlan) -> None:
        """One unit of the plan is done (run, or not needed): decide the case after the last."""
        plan.remaining -= 1
        if plan.remaining == 0:
            plan.result = _case_result(
                plan,
                interrupted=False,
                redactor=self.options.redactor,
                statistics=self.options.statistics,
            )
            if self.spool is not None:
                self.write_block(plan, plan.result)
            self.progress.case_done(plan.result)

    def decided_failure(self, plan: CasePlan) -> bool:
        """Whether a blocking case has failed (or errored), even before all its trials ran."""
        if plan.case.config.gate != "block":
            return False
        if plan.result is not None:
            return plan.result.verdict in ("fail", "error")
        trials = [t for t in plan.results if t is not None]
        passes = sum(1 for t in trials if t.status == "pass")
        failures = sum(1 for t in trials if t.status == "fail")
        return plan.case.config.pass_rule.decide(plan.trials, passes, failures) == "fail"

    def stop(self) -> None:
        """Stop at the first blocking failure (``-x``): no new trial starts, running ones end."""
        self.stopped = True
        current = asyncio.current_task()
        for task in self.workers:
            if task is not current:
                task.cancel()

    # -- one trial ------------------------------------------------------------------------------

    async def trial(self, plan: CasePlan, index: int) -> TrialResult:
        config = plan.case.config
        attempts = 0
        while True:
            attempts += 1
            started = time.perf_counter()
            checking = _Checking()
            try:
                attempt = contained(self.attempt(plan, index, checking))
                if config.timeout is None:
                    trial, infra = await attempt
                else:
                    trial, infra = await asyncio.wait_for(attempt, config.timeout)
            except asyncio.TimeoutError:
                assert config.timeout is not None
                if checking.check is not None:  # a check of yours was running: it fails
                    bound = f"the case's timeout ({config.timeout:g} s)"
                    failed = check_timeout(checking.check, bound)
                    trial = self.finish(
                        TrialResult(index, "fail", [*checking.results, failed]),
                        checking.traces,
                        checking.counters,
                        started,
                    )
                    infra = None
                else:
                    message = f"the trial took longer than its timeout ({config.timeout:g} s)"
                    trial = TrialResult(index, "error", error=message, error_type="TrialTimeout")
                    infra = Infra("TrialTimeout", message, retryable=False)
            except Exited as escaped:
                if isinstance(escaped.error, KeyboardInterrupt):
                    self.interrupted = True  # as Ctrl-C: the reports hold what finished
                    self.stop()
                    raise asyncio.CancelledError from None
                trial, infra = _escaped_trial(index, escaped.error), None
            trial.attempts = attempts
            if not trial.duration_ms:
                trial.duration_ms = (time.perf_counter() - started) * 1000
            if infra is not None and infra.retryable and attempts <= config.retries:
                await asyncio.sleep(self.backoff(attempts, infra.retry_after))
                continue
            _redact_trial(trial, self.options.redactor)
            self.store_traces(plan, trial)
            if self.spool is not None:
                self.hold(plan, trial)
            keep = self.options.keep_traces or (
                self.options.keep_failed_traces and trial.status != "pass"
            )
            if not keep:
                trial.traces = None
            return trial

    def backoff(self, attempt: int, retry_after: float | None) -> float:
        base = self.options.retry_backoff * (2 ** (attempt - 1))
        wait = max(base, retry_after or 0.0)
        return float(min(wait, self.options.retry_backoff_max))

    async def attempt(
        self, plan: CasePlan, index: int, checking: _Checking
    ) -> tuple[TrialResult, Infra | None]:
        case = plan.case
        started = time.perf_counter()
        counters = Counters()
        model = self.trial_model(plan, index, counters)
        mocks: list[Any] = []
        with contextlib.ExitStack() as isolation:
            agent = _trial_agent(plan, index, model, mocks, isolation)
            if isinstance(agent, TrialResult):
                return agent, None
            session = Session(agent)
            run_error: AgentRunError | None = None
            # an empty conversation is kept when a turn stops on an error
            conversation = None if case.user is None else Conversation()
            try:
                conversation = await self.play(plan, index, session, counters)
            except MockBypassed:
                raise
            except AgentRunError as exc:
                infra = infrastructure_error(exc)
                if infra is not None:
                    trial = self.finish(
                        TrialResult(
                            index, "error", error=infra.message, error_type=infra.error_type
                        ),
                        session.traces,
                        counters,
                        started,
                    )
                    return trial, infra
                run_error = exc
            except ModelError as exc:  # the user model failed: no verdict on the agent
                infra = infrastructure_error(exc) or Infra(type(exc).__name__, str(exc), False)
                infra.message = f"the user model failed: {infra.message}"
                trial = TrialResult(
                    index, "error", error=infra.message, error_type=infra.error_type
                )
                return self.finish(trial, session.traces, counters, started), infra
            except Exception as exc:  # a bug in a user function: the case fails
                if case.user is None:
                    raise
                message = f"the user's turn failed: {type(exc).__name__}: {exc}"
                trial = TrialResult(index, "fail", [CheckResult("user", "fail", message)], message)
                trial.error_type = type(exc).__name__
                trial.traceback = _user_traceback(exc)
                return self.finish(trial, session.traces, counters, started), None
        traces = list(session.traces)
        checking.traces, checking.counters = traces, counters
        checking.conversation = conversation
        return await self.grade(plan, index, SessionRecord(traces, mocks), checking, run_error)

    async def play(
        self, plan: CasePlan, index: int, session: Session, counters: Counters
    ) -> Conversation | None:
        """The case's conversation with the agent: its user's, then its scripted turns."""
        case, settings = plan.case, plan.case.config.settings
        metadata = {
            **case.metadata,
            "eval": {"suite": case.suite, "case": case.name, "trial": index},
        }
        conversation = None
        if case.user is not None:
            user_model = None
            if plan.user_slot is not None:
                user_model = TrialModel(
                    plan.user_slot, index, counters, self._cache(plan.user_slot)
                )
            conversation = await converse(
                case.user,
                session,
                user_model=user_model,
                metadata=metadata,
                tags=case.tags,
                settings=settings,
            )
        for turn in case.turns:
            await session.run(turn.input, metadata=metadata, tags=case.tags, settings=settings)
        return conversation

    def trial_model(self, plan: CasePlan, index: int, counters: Counters) -> Model:
        """The model of one trial: the case's script, or the case's model (cached, limited)."""
        if plan.scripted:
            from toolproof.models.fake import ScriptedModel

            # An agent whose tools are known only from its requests has its scripted calls
            # checked there; the suite checked the others' when it loaded.
            external = plan.case.config.agent.external
            return ScriptedModel(plan.case.script or [], name=SCRIPTED, check_calls=external)
        assert plan.slot is not None
        return TrialModel(plan.slot, index, counters, self._cache(plan.slot), self.waiting)

    def _cache(self, slot: Slot) -> ResponseCache | None:
        """The response cache for a model of the run (none for toolproof's stand-in models)."""
        return None if answers_locally(slot) else self.cache

    async def grade(
        self,
        plan: CasePlan,
        index: int,
        record: SessionRecord,
        checking: _Checking,
        run_error: AgentRunError | None,
    ) -> tuple[TrialResult, Infra | None]:
        """The trial's checks, then (when they pass) the judge; a failing check fails it."""
        case, config = plan.case, plan.case.config
        traces, counters, started = record.traces, checking.counters, checking.started
        checks: list[CheckResult] = checking.results
        conversation = checking.conversation
        # Checks of yours run in threads, each within CHECK_TIMEOUT, or within the trial's
        # timeout when the case has one (trial() then fails the check it interrupted).
        bound = CHECK_TIMEOUT if config.timeout is None else None
        try:
            checks.extend(_completion(case, record, run_error))
            if conversation is not None and case.user is not None:
                checks.extend(conversation_checks(case.user, conversation, traces))
            for one in [
                *(check for check in case.checks if check.grade is None),
                *(check for turn in case.turns for check in turn.checks),
                *(conversation.checks if conversation is not None else ()),
            ]:
                checking.check = one
                checks.append(await run_check(one, record, bound))
            checking.check = None
            if case.attack is not None and case.attack.attacked:
                from toolproof.evals._attacks import attack_outcome

                checks[:] = attack_outcome(case, record, checks)
        except Exception as exc:  # a bug in a check fails the trial, naming the check's error
            message = f"a check raised {type(exc).__name__}: {exc}"
            trial = self.finish(
                TrialResult(
                    index,
                    "fail",
                    [*checks, CheckResult("checks", "fail", message)],
                    message,
                    type(exc).__name__,
                ),
                traces,
                counters,
                started,
            )
            trial.traceback = _user_traceback(exc)
            return trial, None
        if case.judge or _graded(case):
            meter = None if plan.judge_slot is None else Metered(plan.judge_slot)
            counters.judge = meter
            try:
                checks.extend(await self.judge(plan, record, checks, meter))
            except ModelError as exc:
                infra = infrastructure_error(exc)
                assert infra is not None
                infra.message = f"the judge model failed: {infra.message}"
                trial = self.finish(
                    TrialResult(index, "error", checks, infra.message, infra.error_type),
                    traces,
                    counters,
                    started,
                )
                return trial, infra
        failed = any(c.status in ("fail", "inconclusive") for c in checks)
        trial = TrialResult(index, "fail" if failed else "pass", checks)
        if conversation is not None and conversation.faults:
            trial.status = "simulator_fault"  # the user's mistake: no verdict on the agent
        if run_error is not None:
            root = run_error.__cause__ or run_error
            trial.error, trial.error_type = str(run_error), type(root).__name__
            trial.traceback = _user_traceback(run_error)
        return self.finish(trial, traces, counters, started), None

    def finish(
        self, trial: TrialResult, traces: list[Trace], counters: Counters, started: float
    ) -> TrialResult:
        usage = None
        cost: float | None = 0.0
        for trace in traces:
            usage = trace.usage if usage is None else usage + trace.usage
            cost = None if cost is None or trace.cost is None else cost + trace.cost
        if usage is not None:
            trial.usage = usage
        trial.cost = cost if traces else None
        trial.agent_ms = sum(trace.duration_ms for trace in traces)
        trial.traces = traces
        if counters.judge is not None:
            trial.judge_usage = counters.judge.usage
            trial.judge_cost = counters.judge.cost
            trial.judge_ms = counters.judge.ms
        trial.model_calls = counters.model_calls
        trial.cached_calls = counters.cached_calls
        trial.duration_ms = (time.perf_counter() - started) * 1000
        return trial

    async def judge(
        self,
        plan: CasePlan,
        record: SessionRecord,
        objective: list[CheckResult],
        meter: Metered | None = None,
    ) -> list[CheckResult]:
        from toolproof.evals._judge import judge

        case = plan.case
        config = case.config
        if plan.judge_slot is None:
            if plan.scripted:
                why = "the case ran scripted, and a scripted run judges only with --judge-model"
            else:
                why = (
                    f"the case's model ({plan.model_name}) is scripted in Python, so it cannot "
                    "judge its own trials; set judge_model in the suite or pass --judge-model"
                )
            reason = f"not judged: no judge model ({why})"
            return [
                CheckResult("judge", "skip", reason, kind="judged", criterion=c) for c in case.judge
            ] + [CheckResult(c.name, "skip", reason, kind="judged") for c in _graded(case)]
        if config.judge_when == "objective_pass" and any(
            c.status in ("fail", "inconclusive") for c in objective
        ):
            reason = (
                "not judged: the objective checks failed (the judge runs only when they pass; "
                "set judge_when: always to judge anyway)"
            )
            return [
                CheckResult("judge", "skip", reason, kind="judged", criterion=c) for c in case.judge
            ] + [CheckResult(c.name, "skip", reason, kind="judged") for c in _graded(case)]
        model: Model = meter if meter is not None else LimitedModel(plan.judge_slot)
        outcomes = await asyncio.gather(
            *(
                contained(
                    judge(
                        model,
                        criterion,
                        record,
                        case.metadata,
                        cache=self.cache,
                        inconclusive=config.judge_inconclusive,
                        agent=config.judge_sees_agent,
                    )
                )
                for criterion in case.judge
            ),
            *(  # judged checks of `expect:` (faithfulness), graded by the same judge
                contained(
                    check.grade(model, record, case.metadata, self.cache, config.judge_inconclusive)
                )
                for check in _graded(case)
                if check.grade is not None
            ),
        )
        self.judge_calls += sum(1 for _, called in outcomes if called)
        return [result for result, _ in outcomes]

    def spool_line(self, trial: TrialResult) -> bytes:
        """The trial as the JSON report holds it (its traces included), one line."""
        from toolproof._trace import _adapter

        global _SPOOL_ENCODER
        if _SPOOL_ENCODER is None:
            _SPOOL_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))
        head = utf8(_SPOOL_ENCODER.encode(trial.head()))
        traces = b",".join(_adapter().dump_json(trace) for trace in trial.traces or [])
        line: bytes = head[:-1] + b',"traces":[' + traces + b"]}"
        return line

    def hold(self, plan: CasePlan, trial: TrialResult) -> None:
        """Keep the trial's report line until its case is decided (see :meth:`write_block`)."""
        lines = self.lines.get(id(plan))
        if lines is None:
            lines = self.lines[id(plan)] = [None] * plan.trials
        lines[trial.index] = self.spool_line(trial)

    def write_block(self, plan: CasePlan, result: CaseResult) -> None:
        """Write the case's entry of the JSON report (its trials inside) to the spool.

        Each trial's ``spool`` then points at its line inside the entry.
        """
        assert self.spool is not None
        lines = self.lines.pop(id(plan), None)
        if lines is None:
            return
        global _CASE_ENCODER
        if _CASE_ENCODER is None:
            _CASE_ENCODER = json.JSONEncoder(ensure_ascii=False)
        head = utf8(_CASE_ENCODER.encode(result.head())[:-1]) + b', "trials": ['
        offset = self.spool.tell()
        parts = [head]
        position = offset + len(head)
        for number, trial in enumerate(result.trials):
            line = lines[trial.index]
            assert line is not None
            separator = b",\n   " if number else b"\n   "
            trial.spool = (position + len(separator), len(line))
            parts += (separator, line)
            position += len(separator) + len(line)
        parts.append(b"]}")
        block = b"".join(parts)
        if self.spooled(block):
            self.blocks[id(result)] = (offset, len(block))

    def write_lines(self, plan: CasePlan) -> None:
        """Write the held lines of a case that was not decided (the run stopped early)."""
        assert self.spool is not None
        for trial, line in zip(plan.results, self.lines.pop(id(plan), ()), strict=False):
            if trial is not None and line is not None and self.spool is not None:
                trial.spool = (self.spool.tell(), len(line))
                if not self.spooled(line + b"\n"):
                    return

    def spooled(self, data: bytes) -> bool:
        """Write to the spool; whether it could.

        When the spool cannot grow (a full disk, a file-size limit), the run goes on and
        the reports are written without the traces of the trials.
        """
        assert self.spool is not None
        try:
            self.spool.write(data)
        except OSError as exc:
            self.spool_error = f"traces left out of the reports: {exc.strerror or exc}"
            for plan in self.plans:
                for trial in plan.results:
                    if trial is not None:
                        trial.spool = None
            self.blocks.clear()
            with contextlib.suppress(OSError):  # (what it still holds cannot be written)
                self.spool.close()
            self.spool = None
            return False
        return True

    def write_pending(self) -> None:
        """Write every line still held, so each finished trial is in the spool."""
        if self.spool is None:
            return
        for plan in self.plans:
            if id(plan) in self.lines:
                self.write_lines(plan)


def _trial_agent(
    plan: CasePlan,
    index: int,
    model: Model,
    mocks: list[Any],
    isolation: contextlib.ExitStack,
) -> Runnable | TrialResult:
    """The trial's agent over its mocks (added to ``mocks``), or the failed trial.

    A bug in the user's mocks or factory fails the case; a tool whose real code was about
    to run (:class:`MockBypassed`) stops the whole run, since nothing ran for real.
    """
    config = plan.case.config
    step = "creating the mocks"
    try:
        for spec in config.mocks:
            mocks.extend(spec.create())
        providers = [MappingMocks(m) if isinstance(m, Mapping) else m for m in mocks]
        toolset = isolation.enter_context(trial_tools(plan.case, providers))
        step = "building the agent"
        return config.agent.build(model, toolset)
    except MockBypassed:
        raise
    except Exception as exc:
        from toolproof._tracebacks import user_location

        where = user_location(exc)
        message = f"{step} failed: {type(exc).__name__}: {exc}" + (f" ({where})" if where else "")
        check = CheckResult("setup", "fail", message)
        trial = TrialResult(index, "fail", [check], message, type(exc).__name__)
        trial.traceback = _user_traceback(exc)
        return trial


class _Checking:
    """How far an attempt's checks went, for a trial timeout that interrupts one of them."""

    def __init__(self) -> None:
        self.check: Check | None = None
        self.results: list[CheckResult] = []
        self.traces: list[Trace] = []
        self.counters = Counters()
        self.started = time.perf_counter()
        #: The conversation with the case's user, when it has one (its checks are graded).
        self.conversation: Conversation | None = None


def _warm_spool() -> None:
    """Build the trace codec of the spool (once per process; see :meth:`_Runner.spool_line`)."""
    from toolproof._trace import _adapter

    _adapter()


#: ``json.dumps(..., ensure_ascii=False, separators=(",", ":"))``, one encoder for every trial.
_SPOOL_ENCODER: Any = None
#: ``json.JSONEncoder(ensure_ascii=False)``, for the cases' heads of the JSON report.
_CASE_ENCODER: Any = None


async def _remote_trial(
    options: PlanOptions, unit: tuple[CasePlan, int]
) -> tuple[TrialResult, int]:
    """On a worker: one trial, with the runner's own code (no response cache there)."""
    from toolproof.evals._progress import NullProgress

    plan, index = unit
    runner = _Runner([plan], options, cache=None, progress=NullProgress(), spool=None)
    trial = await runner.trial(plan, index)
    return trial, runner.judge_calls


def _lost_trial(unit: tuple[CasePlan, int], error: BaseException) -> tuple[TrialResult, int]:
    """A trial whose worker kept dying: an error of its case, not a crash of the run."""
    message = f"the worker running the trial was lost: {type(error).__name__}: {error}"
    return TrialResult(unit[1], "error", error=message, error_type="WorkerLost"), 0


def _escaped_trial(index: int, error: BaseException) -> TrialResult:
    """The failed trial of user code that raised ``SystemExit`` or another BaseException.

    The user's code never decides the exit code: the case fails, like any bug of the user's.
    """
    from toolproof._tracebacks import user_location

    where = user_location(error)
    message = (
        f"your code raised {type(error).__name__}({', '.join(map(repr, error.args))})"
        + (f" ({where})" if where else "")
        + "; it fails the trial (toolproof decides the exit code)"
    )
    trial = TrialResult(index, "fail", [CheckResult("your_code", "fail", message)], message)
    trial.error_type = type(error).__name__
    trial.traceback = _user_traceback(error)
    return trial


def _user_traceback(exc: BaseException) -> str | None:
    """The traceback of the user's frames (for ``--traceback`` and pytest), if any."""
    from toolproof._tracebacks import format_user_traceback, user_location

    return format_user_traceback(exc) if user_location(exc) is not None else None


def _completion(
    case: Case, record: SessionRecord, run_error: AgentRunError | None
) -> list[CheckResult]:
    """The implicit check that every turn ended with an answer.

    It is left out when the case states its own ``stop_reason`` expectation.
    """
    expects_stop = any(check.name == "stop_reason" for check in case.checks) or any(
        check.name == "stop_reason" for turn in case.turns for check in turn.checks
    )
    if run_error is not None:
        from toolproof._tracebacks import user_location

        root = run_error.__cause__ or run_error
        where = user_location(run_error)
        return [
            CheckResult(
                "completed",
                "fail",
                f"the run stopped on an error of the agent or its tools at step "
                f"{run_error.step}: {type(root).__name__}: {run_error}"
                + (f" (at {where})" if where else ""),
            )
        ]
    if not record.traces:
        return [
            CheckResult("completed", "fail", "no turn ran: the user ended before its first message")
        ]
    if expects_stop:
        return []
    for number, trace in enumerate(record.traces, 1):
        if trace.stop_reason != "final":
            turn = f"turn {number} " if len(record.traces) > 1 else ""
            detail = f" ({trace.stop_detail})" if trace.stop_detail else ""
            return [
                CheckResult(
                    "completed",
                    "fail",
                    f"{turn}stopped with {trace.stop_reason} instead of a final answer{detail}",
                )
            ]
    return [CheckResult("completed", "pass", "every turn ended with a final answer")]


def _report_redactor(redactor: Any) -> Any:
    from toolproof.replay._redact import Redactor

    return Redactor() if redactor is None else redactor


def _redact_trial(trial: TrialResult, redactor: Any) -> None:
    """Redact what a trial's reports hold: its traces, error, traceback and check reasons.

    One walk over all of them, so a value found under a sensitive field of a trace (a
    ``user_id`` argument) is also removed from a check's reason that quotes it.
    """
    if redactor is None or not redactor.enabled:
        return
    from toolproof._trace import Trace

    traces = [trace.to_dict() for trace in trial.traces or ()]
    texts = [trial.error, trial.traceback, *(check.reason for check in trial.checks)]
    *clean, extra = redactor.redact_many([*traces, {"metadata": {"texts": texts}}])
    if trial.traces:
        trial.traces = [Trace.from_dict(data) for data in clean]
    error, traceback, *reasons = extra["metadata"]["texts"]
    trial.error, trial.traceback = error, traceback
    for check, reason in zip(trial.checks, reasons, strict=True):
        check.reason = reason


def _redacted_case(case: Case, redactor: Any) -> Case:
    """The case as its reports show it: name, description and tags redacted."""
    if redactor is None or not redactor.enabled:
        return case
    texts = [case.name, case.description, *case.tags]
    name, description, *tags = redactor.redact_value(texts)
    if [name, description, *tags] == texts:
        return case
    import dataclasses

    return dataclasses.replace(case, name=name, description=description, tags=tags)


def _sequential(plan: CasePlan, level: float) -> str | None:
    """With ``until: decided``: the case's verdict if its trials so far decide it, else None.

    Exact stops (the rule's verdict can no longer change) and confident stops (the case's
    pass rate is above or below the rule's at ``level``, by a confidence sequence: valid
    however often it is checked) from :func:`toolproof._statistics.sequential_verdict`.
    Trials with infrastructure errors allow exact stops only.
    """
    from toolproof._statistics import sequential_verdict

    trials = [t for t in plan.results if t is not None]
    passes = sum(1 for t in trials if t.status == "pass")
    failures = sum(1 for t in trials if t.status == "fail")
    rule = plan.case.config.pass_rule
    if len(trials) >= plan.trials:
        return None  # every trial ran: the rule decides as usual
    if any(t.status == "error" for t in trials):
        return rule.decide(plan.trials, passes, failures)
    verdict = sequential_verdict(
        passes,
        passes + failures,
        max_trials=plan.trials,
        min_passes=min(rule.needed(plan.trials), plan.trials),
        level=level,
    )
    return None if verdict == "continue" else verdict


def _case_result(
    plan: CasePlan,
    *,
    interrupted: bool,
    redactor: Any = None,
    statistics: StatsOptions | None = None,
) -> CaseResult:
    case = _redacted_case(plan.case, redactor)
    trials = [t for t in plan.results if t is not None]
    passes = sum(1 for t in trials if t.status == "pass")
    failures = sum(1 for t in trials if t.status == "fail")
    errors = sum(1 for t in trials if t.status == "error")
    faulted = sum(1 for t in trials if t.status == "simulator_fault")
    rule = case.config.pass_rule
    # A trial whose simulated user broke its instructions is no trial of the agent.
    judged = plan.trials - faulted
    decision = rule.decide(judged, passes, failures) if judged else None
    counts = f"{passes}/{judged} trials passed"
    stopped = None
    if plan.decided is not None and len(trials) < plan.trials:
        level = f"{100 * (statistics or StatsOptions()).level:g}%"
        stopped, decision = "decided", plan.decided  # type: ignore[assignment]
        counts = (
            f"{passes}/{len(trials)} trials passed, stopped after {len(trials)} of "
            f"{plan.trials} (until: decided, {level})"
        )
    if faulted:
        counts += f" ({faulted} more with simulator faults: {describe_faults(trials)})"
    if decision == "pass":
        verdict, reason = "pass", f"{counts} (pass_rule: {rule.describe()})"
        if failures:
            reason += "; failing: " + describe_failures(trials)
    elif decision == "fail":
        needed = rule.needed(judged)
        verdict = "fail"
        reason = f"{counts}, {needed} needed (pass_rule: {rule.describe()}): " + (
            describe_failures(trials) or "no trial passed"
        )
    elif interrupted and len(trials) < plan.trials:
        verdict = "not_run"
        reason = f"interrupted after {len(trials)} of {plan.trials} trials"
    elif not judged:
        verdict = "error"
        reason = f"every trial's simulated user broke its instructions: {describe_faults(trials)}"
    else:
        verdict = "error"
        reason = (
            f"{errors} of {plan.trials} trials hit infrastructure errors, so pass_rule "
            f"{rule.describe()} cannot decide ({counts}): {describe_errors(trials)}"
        )
    return CaseResult(
        case,
        verdict,  # type: ignore[arg-type]
        reason,
        trials,
        model=plan.model_name,
        judge_model=plan.judge_slot.model.name if plan.judge_slot else None,
        scripted=runs_scripted(plan),
        statistics=statistics,
        stopped=stopped,
    )


# -- the public entry points --------------------------------------------------------------------


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")


async def evaluate_async(
    suites: Sequence[Suite] | Sequence[str | Path] | str | Path,
    options: EvalOptions | None = None,
    **keywords: Any,
) -> EvalReport:
    """Run eval suites and return the report (the engine of ``toolproof run``).

    Args:
        suites: Loaded suites, or suite files and directories.
        options: How the run goes (see :class:`EvalOptions` for each option).
        **keywords: Any field of :class:`EvalOptions`, over ``options``
            (``evaluate_async(suites, model="scripted", trials=3)``).

    Returns:
        The report; ``report.exit_code`` is what ``toolproof run`` exits with.

    Raises:
        TypeError: A keyword that is not an option (with the closest one).
        ConfigError: A suite is invalid (nothing was run).
        MissingAPIKey: A case's model or judge model needs a key that is not set (nothing
            was run).
        UserError: Bad options, found before anything runs: a report path that cannot be
            written (a folder, a read-only file), no model for a case, a filter
            matching nothing, an unknown model provider, real model requests switched off,
            or an agent factory that fails when built with the case's model and tools.
        asyncio.CancelledError: The run was cancelled (Ctrl-C); the reports were written
            with the cases finished so far before it propagates.
    """
    from toolproof.evals._progress import NullProgress

    chosen = chosen_options(options, keywords)
    runs_on = _checked(chosen)
    specs = _report_specs(chosen.reports)
    loaded = as_suites(suites)
    statistics = chosen.statistics or _suites_statistics(loaded)
    selected = select_cases(loaded, cases=chosen.cases, tags=chosen.tags)
    if chosen.max_attack_success is not None:
        from toolproof.evals._attacks import with_attack_limit

        selected = with_attack_limit(selected, chosen.max_attack_success)
    costs = _CostPlan.make(loaded, chosen.baseline, chosen.cost_gates, chosen.cost_estimate)
    started_at, clock = _now(), time.perf_counter()
    slots: dict[str, Slot] = {}
    plans = plan_cases(
        selected,
        model=chosen.model,
        judge_model=chosen.judge_model,
        user_model=chosen.user_model,
        trials=chosen.trials,
        slots=slots,
        rpm=chosen.requests_per_minute,
        tpm=chosen.tokens_per_minute,
    )
    response_cache = _response_cache(plans, chosen)
    spool, spool_error = _open_spool(specs)
    store = None if chosen.record is None else _open_store(chosen.record)
    redacts = bool(specs) or store is not None
    runner = _Runner(
        plans,
        _plan_options(chosen, runs_on, statistics, store, redacts=redacts),
        cache=response_cache,
        progress=chosen.progress or NullProgress(),
        spool=spool,
    )
    runner.spool_error = spool_error
    try:
        cancelled, report = await _run_and_report(runner, specs, started_at, clock, costs)
    finally:
        await _close(spool, store, response_cache, slots)
    if not chosen.partial_on_cancel:
        if runner.interrupted:
            raise KeyboardInterrupt  # (the user's code raised it; the reports are written)
        if cancelled:
            raise asyncio.CancelledError
    return report


def _checked(options: EvalOptions) -> Executor:
    """Where the trials run; bad counts of trials and workers are refused before anything."""
    from toolproof._executor import executor_from_string

    runs_on = executor_from_string(options.executor)
    if options.concurrency < 1:
        raise UserError(f"concurrency must be at least 1, got {options.concurrency}")
    if options.trials is not None and options.trials < 1:
        raise UserError(f"trials must be at least 1, got {options.trials}")
    return runs_on


def _suites_statistics(suites: Sequence[Suite]) -> StatsOptions:
    """The statistics of a run given none: the suites' ``statistics:`` settings."""
    from toolproof.evals._stats_report import resolve_options

    return resolve_options((suite.name, suite.statistics) for suite in suites)


def _response_cache(plans: Sequence[CasePlan], options: EvalOptions) -> ResponseCache | None:
    """The response cache, when asked for and a case asks a model (or a judge) anything."""
    if not options.cache or all(p.slot is None and p.judge_slot is None for p in plans):
        return None
    from toolproof.evals._cache import ResponseCache

    return ResponseCache(Path(options.cache_dir))


def _plan_options(
    options: EvalOptions,
    runs_on: Executor,
    statistics: StatsOptions,
    store: TraceStore | None,
    *,
    redacts: bool,
) -> PlanOptions:
    """What every trial of the run shares, resolved (``redacts``: reports or a store are kept)."""
    from toolproof._executor import LocalExecutor

    return PlanOptions(
        concurrency=options.concurrency,
        keep_traces=options.keep_traces,
        keep_failed_traces=options.keep_failed_traces,
        exitfirst=options.exitfirst,
        retry_backoff=options.retry_backoff,
        executor=None if isinstance(runs_on, LocalExecutor) else runs_on,
        redactor=_report_redactor(options.redactor) if redacts else None,
        record=store,
        run_id=options.run_id or uuid.uuid4().hex[:12],
        statistics=statistics,
    )


def _report_specs(reports: Sequence[str | ReportSpec]) -> list[ReportSpec]:
    """The reports to write; one that cannot be written is found before anything runs."""
    specs: list[ReportSpec] = [
        *(r for r in reports if isinstance(r, ReportSpec)),
        *parse_report_specs([r for r in reports if isinstance(r, str)]),
    ]
    for spec in specs:
        if not spec.to_stdout:
            check_output(spec.path)
    return specs


def _open_store(record: str | Path) -> TraceStore:
    """The trace store that keeps the trials' traces (``record=``)."""
    from toolproof.replay._store import open_store

    return open_store(record, create=True)


def _open_spool(specs: Sequence[ReportSpec]) -> tuple[IO[bytes] | None, str | None]:
    """The file the trials (with their traces) stream to for the reports, if any are written.

    The JSON report holds every trace; JUnit and Markdown show the transcripts of failing
    trials. A spool that cannot be made (a full disk) leaves the traces out of the reports.
    """
    if not specs:
        return None, None
    try:
        return tempfile.TemporaryFile(prefix="toolproof-trials-"), None
    except OSError as exc:
        return None, f"traces left out of the reports: {exc.strerror or exc}"


@dataclass(frozen=True, slots=True)
class _CostPlan:
    """What a run's costs are compared with: the baseline's cases, the gates, the estimate."""

    before: list[dict[str, Any]] | None
    gates: CostGates | None
    estimate: float | None

    @classmethod
    def make(
        cls,
        suites: Sequence[Suite],
        baseline: str | Path | Mapping[str, Any] | None,
        gates: CostGates | None,
        estimate: float | None,
    ) -> _CostPlan:
        """The plan of a run of ``suites``; their own cost_gates apply too (the strictest wins).

        Raises:
            UserError: Gates without a baseline to compare with.
        """
        if gates is not None and baseline is None:
            raise UserError("cost and latency gates compare with a baseline run: pass baseline=")
        before = None if baseline is None else baseline_cases(baseline)
        return cls(before, strictest([gates, *(suite.cost_gates for suite in suites)]), estimate)

    def of(self, report: EvalReport, plans: Sequence[CasePlan]) -> dict[str, Any]:
        """The report's cost, latency and token figures, compared with the baseline."""
        estimate = self.estimate
        if self.before is not None and estimate is None:
            ran = [p for p in plans if p.result is None or p.result.verdict != "skipped"]
            estimate = estimate_cost(
                [(f"{p.case.suite}::{p.case.name}", p.trials) for p in ran], self.before
            )
        return run_costs(case_entries(report.cases), self.before, self.gates, estimate)


async def _run_and_report(
    runner: _Runner,
    specs: Sequence[ReportSpec],
    started_at: str,
    clock: float,
    costs: _CostPlan,
) -> tuple[bool, EvalReport]:
    """Run the trials, then write the reports of what finished; whether it was cancelled.

    The reports are written however the run ended (cancelled, or crashed: the crash is
    raised after them).
    """
    cancelled = False
    crash: Exception | None = None
    try:
        interrupted = await runner.run()
    except asyncio.CancelledError:
        interrupted = cancelled = True
    except Exception as exc:  # still write the reports of what finished, then raise
        interrupted, crash = True, exc
    finally:
        runner.progress.finish()
    runner.write_pending()
    statistics = runner.options.statistics
    for plan in runner.plans:
        if plan.result is None:
            plan.result = _case_result(
                plan, interrupted=True, redactor=runner.options.redactor, statistics=statistics
            )
    report = EvalReport(
        [p.result for p in runner.plans if p.result is not None],
        started_at=started_at,
        duration_s=time.perf_counter() - clock,
        interrupted=interrupted,
        model_calls=runner.model_calls,
        cached_calls=runner.cached_calls,
        judge_calls=runner.judge_calls,
        statistics=statistics,
    )
    report.costs = costs.of(report, runner.plans)
    if specs:
        from toolproof.evals._report import write_reports

        report.unwritten = write_reports(report, specs, runner.spool, runner.blocks)
        if runner.spool_error is not None:
            report.unwritten.insert(0, runner.spool_error)
    if runner.record_error is not None:
        report.unwritten.append(runner.record_error)
    if crash is not None:
        raise crash
    return cancelled, report


async def _close(
    spool: IO[bytes] | None,
    store: TraceStore | None,
    cache: ResponseCache | None,
    slots: Mapping[str, Slot],
) -> None:
    if spool is not None:
        with contextlib.suppress(OSError):  # (a full disk: the reports are written)
            spool.close()
    if store is not None:
        store.close()
    if cache is not None:
        cache.close()
    for slot in slots.values():
        if slot.owned:
            with contextlib.suppress(Exception):  # closing is best effort
                await slot.model.aclose()


evaluate = blocking(
    evaluate_async,
    "evaluate",
    "`await evaluate_async(...)`",
    doc="""Run eval suites from synchronous code; see :func:`evaluate_async`.

    The options are those of :class:`EvalOptions`: one value, keywords of the same names, or
    both (the keywords over the value's fields).

    Example:
        ```python
        from toolproof.evals import evaluate

        report = evaluate("examples/hr_assistant/hr.eval.yaml", model="scripted")
        assert report.exit_code == 0, [c.reason for c in report.cases]
        ```
    """,
)
