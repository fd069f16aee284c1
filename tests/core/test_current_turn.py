"""A run never forgets its own turn, never repeats a side effect, and stops loops of calls.

Three promises, attacked with generated inputs:

- memory never drops a message of the turn in progress (its tool results are shortened
  instead, with a note, or the run stops with ``budget`` naming ``Memory(max_tokens=...)``);
- a side-effecting call made again with the same arguments in one run is not run again;
- ``max_repeated_calls`` stops a cycle of calls (``A B A B A B``), not only ``A A A``.
"""

from __future__ import annotations

import asyncio
import itertools
from collections import Counter
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolproof import (
    Agent,
    Approval,
    ApprovalRequest,
    Memory,
    Message,
    ToolCall,
    ToolError,
    ToolResult,
    Toolset,
    tool,
)
from toolproof._memory import MemoryState
from toolproof.testing import FunctionModel, RequestInfo, ScriptedModel, call

NOTE = "\n[toolproof shortened this result"
MIN_RESULT_CHARS = 200  # the least memory keeps of a result (docs/harness.md)

# -- memory: the turn in progress is kept whole --------------------------------------------


def _turn(label: str, steps: list[list[int]], *, answered: bool) -> list[Message]:
    """A user turn: the question, steps of calls with results of the given sizes, an answer."""
    messages = [Message.user(f"question {label} " * 3)]
    for s, sizes in enumerate(steps):
        calls = [
            ToolCall("lookup", {"q": f"{label}-{s}-{k}"}, f"{label}_{s}_{k}")
            for k in range(len(sizes))
        ]
        messages.append(Message.assistant(None, calls))
        messages.extend(
            Message.tool(ToolResult(c.id, c.name, "ok", f"{c.id}:" + "r" * size))
            for c, size in zip(calls, sizes, strict=True)
        )
    if answered:
        messages.append(Message.assistant(f"answer {label}"))
    return messages


def _check_no_orphans(messages: list[Message]) -> None:
    open_ids: set[str] = set()
    for message in messages:
        if message.role == "tool":
            assert message.tool_call_id in open_ids, f"orphaned tool message {message.tool_call_id}"
            open_ids.discard(message.tool_call_id or "")
        else:
            assert not open_ids, f"tool_calls {open_ids} without results"
            open_ids = {c.id for c in message.tool_calls}


def _cut(message: Message, budget: int) -> Message:
    """``message`` as memory shortens it to the least it keeps."""
    text, keep = message.text, MIN_RESULT_CHARS
    if len(text) <= keep:
        return message
    note = (
        f"{NOTE} to fit Memory(max_tokens={budget}): {len(text) - keep} of its {len(text)} "
        "characters are left out]"
    )
    return Message.tool(ToolResult(message.tool_call_id or "", "lookup", "ok", text[:keep] + note))


steps_of = st.lists(st.lists(st.integers(0, 3000), min_size=1, max_size=3), max_size=3)


@settings(max_examples=300, deadline=None)
@given(
    earlier=st.lists(steps_of, max_size=4),
    current=steps_of,
    budget=st.integers(20, 4000),
    calibration=st.sampled_from([0.5, 1.0, 1.7]),
)
def test_memory_keeps_the_turn_in_progress_or_says_it_cannot(
    earlier: list[list[list[int]]], current: list[list[int]], budget: int, calibration: float
) -> None:
    history = [m for i, steps in enumerate(earlier) for m in _turn(f"h{i}", steps, answered=True)]
    turn = _turn("now", current, answered=False)
    conversation = [*history, *turn]
    memory = Memory(max_tokens=budget)
    system = Message.system("You pay invoices.")
    counts = [memory.count(m) for m in conversation]
    state = MemoryState(calibration=calibration)
    prepared = asyncio.run(
        memory.prepare(system, conversation, counts, state, protect=len(history))
    )

    overflow = getattr(prepared, "overflow", None)
    if overflow is not None:
        # Only when the turn truly cannot fit: every result cut to the floor is still over.
        assert f"Memory(max_tokens={budget})" in overflow
        assert prepared.messages == []
        floor = [_cut(m, budget) if m.role == "tool" else m for m in turn]
        floor_tokens = memory.count(system) + sum(memory.count(m) for m in floor)
        assert floor_tokens * calibration > budget
        return

    sent = prepared.messages[1:]
    assert prepared.messages[0] == system
    _check_no_orphans(sent)
    # Every message of the turn in progress is there, in order; results may be shortened.
    current_sent = sent[len(sent) - len(turn) :]
    assert len(current_sent) == len(turn)
    shortened = 0
    for original, got in zip(turn, current_sent, strict=True):
        if got == original:
            continue
        shortened += 1
        assert got.role == "tool" and got.tool_call_id == original.tool_call_id
        kept, note = got.text.split(NOTE, 1)
        assert original.text.startswith(kept) and len(kept) >= MIN_RESULT_CHARS
        assert f"Memory(max_tokens={budget})" in note
    # Earlier turns are dropped oldest first, by whole groups.
    earlier_sent = sent[: len(sent) - len(turn)]
    assert earlier_sent == history[len(history) - len(earlier_sent) :]
    assert prepared.trimmed == len(history) - len(earlier_sent)
    if shortened:
        assert earlier_sent == []  # results are shortened only once no earlier turn is left
    if prepared.trimmed or shortened:
        assert prepared.estimated_tokens <= budget


def test_a_turn_with_results_too_large_is_shortened_with_a_note() -> None:
    turn = _turn("now", [[5000, 30]], answered=False)
    memory = Memory(max_tokens=400)
    prepared = asyncio.run(
        memory.prepare(None, turn, [memory.count(m) for m in turn], MemoryState(), protect=0)
    )
    assert getattr(prepared, "overflow", None) is None
    big, small = prepared.messages[2], prepared.messages[3]
    assert small == turn[3]  # results under the cut length are left as they are
    assert big.text.startswith("now_0_0:rrr")
    assert big.text.endswith(
        "[toolproof shortened this result to fit Memory(max_tokens=400): "
        f"{5008 - (len(big.text.split(NOTE)[0]))} of its 5008 characters are left out]"
    )
    assert prepared.estimated_tokens <= 400


# -- the agent: its requests, its side effects ---------------------------------------------

INVOICES = ["I1", "I2", "I3"]
KEYS = ["k1", "k2", "k3"]
an_action = st.one_of(
    st.tuples(st.just("send_payment"), st.sampled_from(INVOICES)),
    st.tuples(st.just("lookup"), st.sampled_from(KEYS)),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    plan=st.lists(st.lists(an_action, min_size=1, max_size=3), min_size=1, max_size=8),
    sizes=st.fixed_dictionaries({k: st.integers(0, 2500) for k in [*INVOICES, *KEYS]}),
    history=st.lists(steps_of, max_size=2),
    budget=st.integers(60, 2500),
    busy=st.sets(st.sampled_from(INVOICES)),
)
def test_a_run_sees_its_own_results_and_runs_a_side_effect_once(
    plan: list[list[tuple[str, str]]],
    sizes: dict[str, int],
    history: list[list[list[int]]],
    budget: int,
    busy: set[str],
) -> None:
    executed: list[str] = []  # payments made
    attempts: Counter[str] = Counter()

    @tool(side_effects=True)
    def send_payment(invoice: str) -> str:
        """Pay an invoice.

        Args:
            invoice: The invoice id.
        """
        attempts[invoice] += 1
        if invoice in busy and attempts[invoice] == 1:  # the first attempt fails
            raise ToolError("the bank is busy")
        executed.append(invoice)
        return f"paid {invoice} " + "p" * sizes[invoice]

    @tool
    def lookup(key: str) -> str:
        """Look a key up.

        Args:
            key: The key.
        """
        return f"{key}=" + "v" * sizes[key]

    def respond(messages: list[Message], info: RequestInfo) -> Any:
        # The model asks for the planned calls, and pays again any invoice whose payment
        # it no longer sees (what a model does when memory drops its own results).
        paid = {
            m.text.split()[1] for m in messages if m.role == "tool" and m.name == "send_payment"
        }
        planned = plan[info.step - 1] if info.step <= len(plan) else []
        again = [i for i in sorted(asked) if i not in paid]
        calls = [
            call(name, **{"invoice" if name == "send_payment" else "key": arg})
            for name, arg in planned
        ]
        calls += [call("send_payment", invoice=i) for i in again]
        for name, arg in planned:
            if name == "send_payment":
                asked.add(arg)
        return calls or "done"

    asked: set[str] = set()
    model = FunctionModel(respond)
    earlier = [m for i, steps in enumerate(history) for m in _turn(f"h{i}", steps, answered=True)]
    agent = Agent(
        model,
        [send_payment, lookup],
        memory=Memory(max_tokens=budget),
        max_steps=10,
        max_repeated_calls=None,
    )
    result = agent.run_sync("Pay the invoices.", history=earlier)
    trace = result.trace

    assert result.stop_reason in ("final", "max_steps", "budget")
    if result.stop_reason == "budget":
        assert "Memory(max_tokens=" in (result.stop_detail or "")
    # Every request keeps the run's own results so far (shortened at most), never orphans.
    for k, request in enumerate(model.requests):
        _check_no_orphans(request.messages)
        seen = {m.tool_call_id for m in request.messages if m.role == "tool"}
        ran = {r.call_id for step in trace.steps[:k] for r in step.tool_results}
        assert ran <= seen, f"request {k + 1} lost results {ran - seen}"
    # A payment is made at most once per invoice (a failed attempt may be retried); a
    # repeat after it got the earlier result instead.
    assert all(count == 1 for count in Counter(executed).values()), executed
    paid: dict[str, ToolResult] = {}
    for call_, result_ in trace.calls_and_results():
        if call_.name != "send_payment" or result_ is None:
            continue
        invoice = call_.arguments["invoice"]
        if result_.ok:
            assert invoice not in paid
            paid[invoice] = result_
        elif result_.error_type == "AlreadyRan":
            assert result_.content.startswith(
                f"Error (AlreadyRan): send_payment(invoice='{invoice}') was not run again: "
                "the tool has side effects and "
            )
            if invoice in paid and "running in this step" not in result_.content:
                assert result_.content.endswith(f"Its result: {paid[invoice].content}")
        else:
            assert result_.content == "Error (ToolError): the bank is busy"
    assert sorted(executed) == sorted(paid)


def test_the_amnesiac_payment_run_pays_once() -> None:
    # A budget that cannot hold the turn's results: the model would pay again and again
    # if memory dropped its own payment; now it pays once and the run stops with `budget`.
    paid: list[str] = []

    @tool(side_effects=True)
    def send_payment(invoice: str) -> str:
        """Pay an invoice.

        Args:
            invoice: The invoice id.
        """
        paid.append(invoice)
        return "payment sent: " + "x" * 300

    @tool
    def get_invoice(invoice: str) -> str:
        """Read an invoice.

        Args:
            invoice: The invoice id.
        """
        return "invoice " + "y" * 400

    def respond(messages: list[Message], info: RequestInfo) -> Any:
        names = {m.name for m in messages if m.role == "tool"}
        if "get_invoice" not in names:
            return call("get_invoice", invoice="I1")
        if "send_payment" not in names:
            return call("send_payment", invoice="I1")
        return "Paid."

    agent = Agent(
        FunctionModel(respond),
        [send_payment, get_invoice],
        memory=Memory(max_tokens=150),
        max_steps=8,
    )
    result = agent.run_sync("Pay invoice I1.")
    assert paid == ["I1"]
    assert result.stop_reason == "budget"
    assert result.stop_detail is not None
    assert result.stop_detail.startswith(
        "the current turn does not fit in Memory(max_tokens=150): with earlier turns left "
        "out and its tool results shortened to 200 characters, the request still needs about"
    )
    assert result.stop_detail.endswith("tokens; raise Memory(max_tokens=...)")


# -- side effects run once -----------------------------------------------------------------


def _payment_tool(log: list[dict[str, Any]], **options: Any) -> Any:
    @tool(side_effects=True, errors=(ValueError,), **options)
    def send_payment(invoice: str, amount: float) -> str:
        """Pay an invoice.

        Args:
            invoice: The invoice id.
            amount: The amount.
        """
        log.append({"invoice": invoice, "amount": amount})
        if amount <= 0:
            raise ValueError(f"cannot pay {amount}")
        return f"paid {amount} on {invoice}"

    return send_payment


def test_an_identical_side_effecting_call_gets_the_earlier_result_instead() -> None:
    log: list[dict[str, Any]] = []
    script = [
        call("send_payment", invoice="I1", amount=5.0),
        call("send_payment", amount=5.0, invoice="I1"),  # same arguments, another order
        call("send_payment", invoice="I1", amount=6.0),  # other arguments: runs
        "done",
    ]
    agent = Agent(ScriptedModel(script), [_payment_tool(log)])
    result = agent.run_sync("pay")
    assert log == [{"invoice": "I1", "amount": 5.0}, {"invoice": "I1", "amount": 6.0}]
    repeated = result.trace.tool_results[1]
    assert (repeated.status, repeated.error_type) == ("error", "AlreadyRan")
    assert repeated.content == (
        "Error (AlreadyRan): send_payment(amount=5.0, invoice='I1') was not run again: the "
        "tool has side effects and this call already succeeded in this run. Its result: "
        "paid 5.0 on I1"
    )
    assert result.stop_reason == "final"


def test_parallel_identical_side_effecting_calls_run_once() -> None:
    log: list[dict[str, Any]] = []
    pair = [call("send_payment", invoice="I1", amount=5.0)] * 2
    agent = Agent(ScriptedModel([pair, "done"]), [_payment_tool(log, thread=True)])
    results = agent.run_sync("pay").trace.tool_results
    assert len(log) == 1
    assert [r.status for r in results] == ["ok", "error"]
    assert "the same call is running in this step" in results[1].content


def test_calls_that_failed_may_be_retried_until_one_succeeds() -> None:
    log: list[dict[str, Any]] = []
    decisions = iter([Approval.reject("not now"), Approval.approve(), Approval.approve()])
    asked: list[ApprovalRequest] = []

    def approver(request: ApprovalRequest) -> Approval:
        asked.append(request)
        return next(decisions)

    script = [
        call("send_payment", invoice="I1", amount="many"),  # invalid: never ran
        call("send_payment", invoice="I1", amount=5.0),  # rejected: never ran
        call("send_payment", invoice="I1", amount=5.0),  # approved: runs
        call("send_payment", invoice="I1", amount=5.0),  # ran already: not asked again
        "done",
    ]
    agent = Agent(
        ScriptedModel(script),
        [_payment_tool(log, requires_approval=True)],
        approver=approver,
        max_repeated_calls=None,
    )
    kinds = [r.error_type for r in agent.run_sync("pay").trace.tool_results]
    assert kinds == ["ValidationError", "Rejected", None, "AlreadyRan"]
    assert log == [{"invoice": "I1", "amount": 5.0}]
    assert len(asked) == 2
    # A call the tool failed may be retried too (a fault, then a retry, is a normal run).
    log.clear()
    failing = [call("send_payment", invoice="I2", amount=-1.0)] * 2 + ["done"]
    agent = Agent(ScriptedModel(failing), [_payment_tool(log)], max_repeated_calls=None)
    results = agent.run_sync("pay").trace.tool_results
    assert len(log) == 2
    assert [r.content for r in results] == ["Error (ValueError): cannot pay -1.0"] * 2


def test_mocked_side_effects_run_once_too() -> None:
    log: list[dict[str, Any]] = []

    def mock(**arguments: Any) -> str:
        log.append(arguments)
        return "mock paid"

    toolset = Toolset([_payment_tool([])], mode="mock", mocks={"send_payment": mock})
    script = [call("send_payment", invoice="I1", amount=5.0)] * 2 + ["done"]
    agent = Agent(ScriptedModel(script), toolset)
    results = agent.run_sync("pay").trace.tool_results
    assert len(log) == 1 and results[1].error_type == "AlreadyRan"


def test_tools_without_side_effects_run_every_time() -> None:
    count = itertools.count()

    @tool
    def now() -> int:
        """A counter."""
        return next(count)

    agent = Agent(ScriptedModel([call("now"), call("now"), "done"]), [now])
    assert [r.content for r in agent.run_sync("x").trace.tool_results] == ["0", "1"]


# -- repeated calls: any cycle of up to four calls -----------------------------------------

# Calls with equal arguments written in different key orders count as the same call.
CALLS = {
    "a": {"x": 1, "y": 2},
    "a'": {"y": 2, "x": 1},
    "b": {"x": 2, "y": 2},
    "c": {"x": 1, "y": 3},
    "d": {"x": 1, "y": "1"},
}


def _key(label: str) -> str:
    return {"a'": "a"}.get(label, label)


def _stops_at(keys: list[str], limit: int) -> int | None:
    """The number of calls after which the run must stop (a brute-force oracle)."""
    for n in range(1, len(keys) + 1):
        for period in range(1, 5):
            tail = keys[n - period * limit : n]
            if len(tail) == period * limit and tail == tail[:period] * limit:
                return n
    return None


@settings(max_examples=300, deadline=None)
@given(
    steps=st.lists(
        st.lists(st.sampled_from(sorted(CALLS)), min_size=1, max_size=3), min_size=1, max_size=12
    ),
    limit=st.integers(2, 4),
)
def test_repeated_calls_stop_exactly_when_a_cycle_repeats(
    steps: list[list[str]], limit: int
) -> None:
    ran: list[dict[str, Any]] = []

    @tool
    def probe(x: int, y: Any) -> str:
        """Probe.

        Args:
            x: X.
            y: Y.
        """
        ran.append({"x": x, "y": y})
        return "ok"

    script: list[Any] = [[call("probe", **CALLS[label]) for label in step] for step in steps]
    agent = Agent(ScriptedModel([*script, "done"]), [probe], max_steps=20, max_repeated_calls=limit)
    result = agent.run_sync("probe")
    flat = [_key(label) for step in steps for label in step]
    stop = _stops_at(flat, limit)
    if stop is None:
        assert result.stop_reason == "final"
        assert len(ran) == len(flat)
        return
    assert result.stop_reason == "repeated_call"
    assert f"{limit} times in a row" in (result.stop_detail or "")
    # The step holding the call that completed the cycle ran none of its calls.
    before, total = 0, 0
    for step in steps:
        if total + len(step) >= stop:
            break
        total += len(step)
        before += 1
    assert len(ran) == total
    assert len(result.trace.steps) == before + 1


def test_alternating_calls_stop_with_the_cycle_named() -> None:
    alternating = [call("probe", x=1, y=1), call("probe", x=2, y=2)] * 3 + ["done"]

    @tool
    def probe(x: int, y: int) -> str:
        """Probe.

        Args:
            x: X.
            y: Y.
        """
        return "ok"

    result = Agent(ScriptedModel(alternating), [probe], max_steps=10).run_sync("x")
    assert result.stop_reason == "repeated_call"
    assert result.stop_detail == (
        "the calls probe(x=1, y=1), probe(x=2, y=2) were requested 3 times in a row, in this "
        "order (max_repeated_calls=3)"
    )
    assert len(result.trace.tool_results) == 5
