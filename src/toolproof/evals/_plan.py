"""The eval runner's plan: which cases run how many trials on which model."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolproof.errors import (
    MissingAPIKey,
    MockBypassed,
    ModelRequestsDisabled,
    UserError,
)
from toolproof.evals._results import (
    CaseResult,
    TrialResult,
)
from toolproof.evals._stats_report import StatsOptions
from toolproof.evals._suite import Case, Suite, load_suites
from toolproof.evals._trial_models import SCRIPTED, Slot
from toolproof.models._base import Model

if TYPE_CHECKING:
    from toolproof._executor import Executor

__all__ = [
    "CasePlan",
    "RunOptions",
    "answers_locally",
    "as_suites",
    "graded",
    "plan_cases",
    "runs_scripted",
]

# -- plan ---------------------------------------------------------------------------------------


@dataclass(slots=True)
class CasePlan:
    """How a case runs (model, judge, user model, trials) and, as it runs, its results."""

    case: Case
    trials: int
    model_name: str | None = None
    slot: Slot | None = None
    scripted: bool = False
    judge_slot: Slot | None = None
    user_slot: Slot | None = None
    skip: str | None = None
    results: list[TrialResult | None] = field(default_factory=list)
    remaining: int = 0
    result: CaseResult | None = None
    #: With ``until: decided``: the verdict once known early (no new trial of it starts).
    decided: str | None = None


@dataclass(slots=True)
class RunOptions:
    """The options of a run that every case shares."""

    concurrency: int = 8
    keep_traces: bool = False
    keep_failed_traces: bool = False
    exitfirst: bool = False
    retry_backoff: float = 1.0
    retry_backoff_max: float = 30.0
    executor: Executor | None = None  # None: this process
    redactor: Any = None  # redacts what the reports and run log hold (None: nothing)
    statistics: StatsOptions = field(default_factory=StatsOptions)
    record: Any = None  # a TraceStore that keeps every trial's traces (None: not kept)
    run_id: str = ""  # the run the recorded traces belong to


def as_suites(suites: Sequence[Suite] | Sequence[str | Path] | str | Path) -> list[Suite]:
    if isinstance(suites, (str, Path)):
        return load_suites([suites])
    items = list(suites)
    if all(isinstance(s, Suite) for s in items):
        return [s for s in items if isinstance(s, Suite)]
    if any(isinstance(s, Suite) for s in items):
        raise UserError("pass either Suite objects or paths, not both")
    return load_suites([s for s in items if isinstance(s, (str, Path))])


def answers_locally(slot: Slot) -> bool:
    """Whether the slot's model is a scripted or function model, answering in this process.

    Such a model never judges unless named as the judge (it would consume its script's
    responses and grade nothing), and its answers are never cached (its code may change
    between runs, and answering costs nothing).
    """
    from toolproof.models.fake import FunctionModel, ScriptedModel

    return isinstance(slot.model, (FunctionModel, ScriptedModel))


def plan_cases(
    cases: Iterable[Case],
    *,
    model: str | Model | None,
    judge_model: str | Model | None,
    trials: int | None,
    slots: dict[str, Slot],
    user_model: str | Model | None = None,
    rpm: float | None,
    tpm: float | None,
) -> list[CasePlan]:
    """Decide each case's model, judge and trials; build each distinct model once."""
    plans: list[CasePlan] = []
    missing: list[str] = []

    def slot_for(spec: str | Model, role: str) -> Slot:
        return _slot_for(spec, role, slots, rpm, tpm)

    for case in cases:
        n = trials or case.config.trials
        rule = case.config.pass_rule
        if rule.kind == "at_least" and rule.value > n:
            raise UserError(
                f"{case.id} needs {rule.describe()} passing trials but runs only {n} "
                "(--trials is lower than its pass_rule): raise --trials"
            )
        plan = CasePlan(case, n, results=[None] * n, remaining=n)
        plans.append(plan)
        chosen: str | Model | None = model if model is not None else case.config.model
        if case.skip is not None:
            plan.skip = case.skip
        elif chosen is None:
            missing.append(case.id)
            continue
        elif _is_scripted(chosen):
            plan.scripted = True
            plan.model_name = SCRIPTED
            if case.script is None:
                plan.skip = "no script: the scripted model needs the case's 'script:'"
        else:
            plan.slot = slot_for(chosen, "model")
            plan.model_name = plan.slot.model.name
        if plan.skip is None:
            _choose_user_model(plan, user_model, slot_for)
        if plan.skip is None:
            _choose_judge(plan, judge_model, slot_for)
        if plan.skip is not None:
            plan.remaining = 0
            plan.results = []
            plan.result = CaseResult(
                case, "skipped", plan.skip, model=plan.model_name, scripted=runs_scripted(plan)
            )
    if missing:
        shown = ", ".join(missing[:5]) + (
            f" and {len(missing) - 5} more" if len(missing) > 5 else ""
        )
        raise UserError(
            f"no model for {shown}: set 'model:' in the suite or the case, or pass --model "
            "(--model scripted runs each case's script, offline)"
        )
    _dry_build(plans)
    return plans


def _choose_user_model(
    plan: CasePlan, user_model: str | Model | None, slot_for: Callable[[str | Model, str], Slot]
) -> None:
    """The model that plays the case's simulated user, if it has one (or why it is skipped)."""
    user = plan.case.user
    if user is None or not user.needs_model:
        return
    chosen_user = user_model if user_model is not None else user.user_model
    if plan.scripted and user_model is None:
        plan.skip = (
            "its user is simulated by a model: a scripted run has no model (give "
            "--user-model, or a user script of fixed and function turns)"
        )
    elif chosen_user is None:
        raise UserError(
            f"{plan.case.id}: its user is simulated by a model: set 'user_model' in its "
            "'user:' or pass --user-model"
        )
    else:
        plan.user_slot = slot_for(chosen_user, "user model")


def _choose_judge(
    plan: CasePlan, judge_model: str | Model | None, slot_for: Callable[[str | Model, str], Slot]
) -> None:
    """The model that grades the case's judged checks, if it has any."""
    case = plan.case
    if not (case.judge or graded(case)):
        return
    judge_choice = judge_model if judge_model is not None else case.config.judge_model
    if plan.scripted and judge_model is None:
        judge_choice = None  # a scripted run is offline: judge only with --judge-model
    if judge_choice is not None and not _is_scripted(judge_choice):
        plan.judge_slot = slot_for(judge_choice, "judge model")
    elif judge_choice is None and plan.slot is not None and not answers_locally(plan.slot):
        plan.judge_slot = plan.slot  # the case's own (real) model judges


def _is_scripted(spec: str | Model) -> bool:
    return isinstance(spec, str) and spec.strip().lower() == SCRIPTED


def _slot_for(
    spec: str | Model, role: str, slots: dict[str, Slot], rpm: float | None, tpm: float | None
) -> Slot:
    """The shared model of ``spec``; raises before anything runs when it cannot work."""
    key = spec if isinstance(spec, str) else f"<instance {id(spec)}>"
    if key in slots:
        return slots[key]
    limiter = None
    if rpm or tpm:
        from toolproof.evals._ratelimit import RateLimiter

        limiter = RateLimiter(rpm, tpm)
    if isinstance(spec, Model):
        slots[key] = Slot(spec, limiter, owned=False)
        return slots[key]
    from toolproof.models import check_allow_model_requests, model_from_string

    try:
        built = model_from_string(spec)
        check_allow_model_requests(spec)
    except MissingAPIKey as exc:
        raise MissingAPIKey(f"{role} {exc}", exc.variable) from None
    except ModelRequestsDisabled:
        raise
    except UserError as exc:
        raise UserError(f"{role} {spec}: {exc}") from None
    slots[key] = Slot(built, limiter)
    return slots[key]


def _dry_build(plans: Sequence[CasePlan]) -> None:
    """Build each case's agent once with its model and toolset before anything runs.

    Mocks are not created (they may hold state); the agent is built, not run. A factory
    that fails here is a configuration error of the suite, reported before any trial.
    """
    from toolproof._tracebacks import user_location
    from toolproof.models.fake import ScriptedModel

    done: set[tuple[int, int, str, str]] = set()
    for plan in plans:
        if plan.skip is not None:
            continue
        config = plan.case.config
        model: Model = plan.slot.model if plan.slot is not None else ScriptedModel([])
        key = (id(config.agent), id(model), config.tools, repr(sorted(config.tool_modes.items())))
        if key in done:
            continue
        done.add(key)
        try:
            toolset = config.agent.toolset.with_mode(
                config.tools, overrides=config.tool_modes or None
            )
            config.agent.build(model, toolset)
        except MockBypassed:
            raise  # names the factory and the fix already
        except UserError as exc:
            raise UserError(f"{plan.case.id}: {exc}") from exc
        except BaseException as exc:  # SystemExit of the factory's too: a failed factory
            import asyncio

            if isinstance(exc, (KeyboardInterrupt, asyncio.CancelledError)):
                raise
            where = user_location(exc)
            raise UserError(
                f"{plan.case.id}: agent factory {config.agent.source} failed with model "
                f"{model.name}: {type(exc).__name__}: {exc}" + (f" ({where})" if where else "")
            ) from exc


def runs_scripted(plan: CasePlan) -> bool:
    """Whether the case answers from a script (a scripted run, or a scripted or function model)."""
    return plan.scripted or (plan.slot is not None and answers_locally(plan.slot))


def graded(case: Case) -> list[Any]:
    """The case's judged checks of ``expect:`` (graded by the judge model)."""
    return [check for check in case.checks if check.grade is not None]
