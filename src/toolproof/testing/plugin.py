"""The toolproof pytest plugin (entry point ``pytest11``).

It only registers fixtures, markers and ``--toolproof-*`` options, and switches real model
requests off for the session (``toolproof.models.ALLOW_MODEL_REQUESTS = False``, restored at
the end) unless ``--toolproof-live`` or ``TOOLPROOF_LIVE=1`` is given. Importing toolproof
does none of this; only pytest loading the plugin does.

Fixtures:
    ``tool_mock``: a strict :class:`~toolproof.testing.ToolMock`, verified at the end of the
        test (options: ``@pytest.mark.tool_mock(assert_all_used=False, key_args=...)``).
    ``scripted_model``: makes :class:`~toolproof.testing.ScriptedModel` objects and checks at
        the end of the test that each used its whole script.
    ``run_agent``: runs an agent (with a model, mocks and faults for this run only) and keeps
        each trace; a failing test's report shows their summaries.
    ``live_model``: the model of the test's ``live_model`` marker.
    ``schema_snapshot``: compares tool schemas with a committed snapshot file.

Markers:
    ``live_model(model, **options)``: the test talks to a real model; it runs only with
    ``--toolproof-live`` (or ``TOOLPROOF_LIVE=1``) and the provider's key set.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Generator, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from toolproof.testing._live import LIVE_ENV, is_live

if TYPE_CHECKING:
    from toolproof._agent import Runnable, RunResult
    from toolproof._toolset import MockProvider, ToolMode
    from toolproof._trace import Trace
    from toolproof.models import Model
    from toolproof.testing import Fault, ScriptedModel, ToolMock

__all__ = ["AgentRunner", "is_live"]

_PREVIOUS_ALLOW = pytest.StashKey[bool]()
_TRACES = pytest.StashKey[list["Trace"]]()
_CALL_FAILED = pytest.StashKey[bool]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("toolproof", "toolproof: agent testing")
    group.addoption(
        "--toolproof-live",
        action="store_true",
        default=False,
        help="allow real model requests and run tests marked live_model (needs the "
        f"provider's API key); {LIVE_ENV}=1 does the same",
    )
    group.addoption(
        "--toolproof-update-snapshots",
        action="store_true",
        default=False,
        help="write the current tool schemas to the snapshot files instead of comparing",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "live_model(model, **options): the test talks to a real model (a model string such "
        "as 'deepseek:deepseek-chat'); it runs only with --toolproof-live (or "
        f"{LIVE_ENV}=1) and the provider's API key set, and is skipped otherwise",
    )
    config.addinivalue_line(
        "markers",
        "tool_mock(key_args=None, mask=..., strict=True, assert_all_used=True): options of "
        "the tool_mock fixture",
    )
    if not config.pluginmanager.has_plugin("toolproof-suites"):
        from toolproof.testing import _suites

        config.pluginmanager.register(_suites, "toolproof-suites")
    import toolproof.models as models

    config.stash[_PREVIOUS_ALLOW] = models.ALLOW_MODEL_REQUESTS
    models.ALLOW_MODEL_REQUESTS = is_live(config)


def pytest_unconfigure(config: pytest.Config) -> None:
    previous = config.stash.get(_PREVIOUS_ALLOW, None)
    if previous is not None:
        import toolproof.models as models

        models.ALLOW_MODEL_REQUESTS = previous


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    live = is_live(config)
    for item in items:
        marker = item.get_closest_marker("live_model")
        if marker is None:
            continue
        spec = marker.args[0] if marker.args and isinstance(marker.args[0], str) else None
        if spec is None:
            continue  # reported at setup
        reason = _skip_reason(spec, live)
        if reason is not None:
            item.add_marker(pytest.mark.skip(reason=reason))


def _skip_reason(spec: str, live: bool) -> str | None:
    """Why a live test cannot run now, or ``None`` (also when the model string is invalid)."""
    if not live:
        return f"live model test ({spec}): run with --toolproof-live or {LIVE_ENV}=1 to enable"
    from toolproof.errors import UserError
    from toolproof.models import api_key_env

    try:
        variable = api_key_env(spec)
    except UserError:
        return None  # setup fails the test with the message
    if variable and not os.environ.get(variable, "").strip():
        return f"live model test ({spec}): {variable} is not set"
    return None


def pytest_runtest_setup(item: pytest.Item) -> None:
    marker = item.get_closest_marker("live_model")
    if marker is None:
        return
    spec = _marker_model(marker)
    from toolproof.errors import UserError
    from toolproof.models import api_key_env

    try:
        api_key_env(spec)
        problem = None
    except UserError as exc:
        problem = str(exc)
    if problem is not None:
        pytest.fail(f"@pytest.mark.live_model({spec!r}): {problem}", pytrace=False)
    reason = _skip_reason(spec, is_live(item.config))  # the key may have gone since collection
    if reason is not None:
        pytest.skip(reason)


def _marker_model(marker: pytest.Mark) -> str:
    if len(marker.args) != 1 or not isinstance(marker.args[0], str):
        pytest.fail(
            "@pytest.mark.live_model needs one model string, e.g. "
            "@pytest.mark.live_model('deepseek:deepseek-chat')",
            pytrace=False,
        )
    spec: str = marker.args[0]
    return spec


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if report.when == "call":
        item.stash[_CALL_FAILED] = report.failed
        traces = item.stash.get(_TRACES, [])
        if report.failed and traces:
            report.sections.append(
                ("toolproof traces", "\n\n".join(trace.summary() for trace in traces))
            )
    return report


def _call_passed(request: pytest.FixtureRequest) -> bool:
    return request.node.stash.get(_CALL_FAILED, True) is False


# -- fixtures --------------------------------------------------------------------------------


@pytest.fixture
def tool_mock(request: pytest.FixtureRequest) -> Iterator[ToolMock]:
    """A strict ToolMock; unused fixtures fail the test at teardown.

    Options come from ``@pytest.mark.tool_mock(...)`` (the ``ToolMock`` arguments).
    """
    from toolproof._mocks import ToolMock

    marker = request.node.get_closest_marker("tool_mock")
    options = dict(marker.kwargs) if marker is not None else {}
    mock = ToolMock(**options)
    yield mock
    if _call_passed(request):
        mock.verify()


@pytest.fixture
def scripted_model(request: pytest.FixtureRequest) -> Iterator[Callable[..., ScriptedModel]]:
    """A factory of scripted models, checked at the end of the test.

    Use: ``model = scripted_model([call("multiply_numbers", a=12, b=8), "96"])``. At
    teardown each model must have used its whole script (the agent asked as many questions
    as the test expected); pass ``assert_all_used=False`` to allow leftovers.
    """
    from toolproof.testing import ScriptedModel

    made: list[tuple[ScriptedModel, bool]] = []

    def make(
        script: Sequence[Any], *, name: str = "scripted", assert_all_used: bool = True
    ) -> ScriptedModel:
        model = ScriptedModel(script, name=name)
        made.append((model, assert_all_used))
        return model

    yield make
    if not _call_passed(request):
        return
    for model, check in made:
        if check and model.remaining:
            unused = model.script[model.position :]
            raise AssertionError(
                f"scripted model {model.name!r} was asked {len(model.requests)} time"
                f"{'s' if len(model.requests) != 1 else ''} but its script has "
                f"{len(model.script)} responses; never used: "
                + ", ".join(_script_item(item) for item in unused)
                + ". Remove them, or pass assert_all_used=False to scripted_model(...)."
            )


def _script_item(item: Any) -> str:
    signature = getattr(item, "signature", None)
    if callable(signature):
        return str(signature())
    if isinstance(item, str):
        return repr(item if len(item) <= 60 else item[:59] + "…")
    return type(item).__name__


class AgentRunner:
    """The ``run_agent`` fixture: run an agent with per-run models, mocks and faults.

    Call it from synchronous tests; ``await run_agent.run(...)`` in async ones. Every trace
    (also of runs that raised) is kept in ``traces`` and printed when the test fails.
    """

    def __init__(self, traces: list[Trace]) -> None:
        self.traces = traces

    async def run(
        self,
        agent: Runnable,
        input: str,
        *,
        model: Model | None = None,
        script: Sequence[Any] | None = None,
        mocks: Sequence[MockProvider | Mapping[str, Callable[..., Any]]] = (),
        faults: Sequence[Fault] = (),
        mode: ToolMode | None = None,
        overrides: Mapping[str, ToolMode] | None = None,
        real: Sequence[str] = (),
        **run_options: Any,
    ) -> RunResult:
        """Run ``agent`` on ``input`` and return the result (in async tests).

        Args:
            agent: The agent.
            input: The user message.
            model: A model for this run (instead of the agent's).
            script: Shortcut for ``model=ScriptedModel(script)``.
            mocks: Mock providers for this run; tools run in mock mode when given.
            faults: Faults to inject for this run (see ``Fault``).
            mode: The tool mode (default: ``"mock"`` when mocks or faults are given, else
                the agent's).
            overrides: Per-tool modes; in mock mode ``"real"`` entries run those tools for
                real, like ``real``.
            real: Tools that run their real implementation on purpose in mock mode. Other
                tools with ``side_effects=True`` never do (see ``mock_tools``).
            **run_options: Passed to ``Agent.run`` (``history``, ``metadata``...).
        """
        from toolproof._run import RunOptions
        from toolproof.errors import AgentRunError, UserError
        from toolproof.testing import ScriptedModel
        from toolproof.testing._faults import mocked_tools

        if model is not None and script is not None:
            raise UserError("run_agent: pass model= or script=, not both")
        if script is not None:
            model = ScriptedModel(script)
        with contextlib.ExitStack() as stack:
            toolset = None
            if mocks or faults or mode or overrides or real:
                toolset = stack.enter_context(
                    mocked_tools(
                        agent, mocks, faults, overrides, mode or "mock", real, "run_agent()"
                    )
                )
            stack.enter_context(agent.override(model=model, tools=toolset))
            try:
                result = await agent.run_with(input, RunOptions(**run_options))
            except AgentRunError as exc:
                if exc.trace is not None:
                    self.traces.append(exc.trace)
                raise
        self.traces.append(result.trace)
        return result

    def __call__(self, agent: Runnable, input: str, **options: Any) -> RunResult:
        """Run ``agent`` on ``input`` from a synchronous test (the arguments of :meth:`run`)."""
        from toolproof._thread_loop import blocking  # (loaded with the first run)

        run = blocking(AgentRunner.run, "run_agent", "`await run_agent.run(...)`")
        return run(self, agent, input, **options)


@pytest.fixture
def run_agent(request: pytest.FixtureRequest) -> AgentRunner:
    """Run agents with per-run models, mocks and faults; traces show up in failure reports."""
    traces: list[Trace] = []
    request.node.stash[_TRACES] = traces
    return AgentRunner(traces)


@pytest.fixture
def live_model(request: pytest.FixtureRequest) -> Model:
    """The real model named by the test's ``@pytest.mark.live_model(...)``."""
    marker = request.node.get_closest_marker("live_model")
    if marker is None:
        pytest.fail(
            "the live_model fixture needs @pytest.mark.live_model('provider:model') on the test",
            pytrace=False,
        )
    from toolproof.models import model_from_string

    return model_from_string(_marker_model(marker), **marker.kwargs)


@pytest.fixture
def schema_snapshot(request: pytest.FixtureRequest) -> Callable[[Any, str | Path], None]:
    """Compare tool schemas with a snapshot file (relative to the test file).

    ``schema_snapshot(TOOLS, "tools.schema.json")`` fails with a readable diff when they
    differ; ``pytest --toolproof-update-snapshots`` writes the current schemas instead.
    """
    from toolproof.testing._contracts import assert_schema_snapshot

    update = bool(request.config.getoption("toolproof_update_snapshots", default=False))
    base = Path(str(request.node.path)).parent

    def check(tools: Any, path: str | Path) -> None:
        __tracebackhide__ = True
        assert_schema_snapshot(tools, base / path, update=update)

    return check
