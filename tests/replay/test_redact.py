"""Redaction: field and pattern rules, actions, stable pseudonyms, and the bytes on disk."""

from __future__ import annotations

import json
import string
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from replay_helpers import run_trace

from toolproof import Message, Trace, tool
from toolproof.errors import ConfigError
from toolproof.replay import PatternRule, Recorder, Redactor, TraceStore
from toolproof.testing import call

SECRET = "test-secret"


@tool
def find_order(user_id: str, order_id: str, api_key: str = "") -> dict[str, Any]:
    """Find an order of a customer.

    Args:
        user_id: The customer.
        order_id: The order.
        api_key: Credentials of the order service.
    """
    return {
        "order": {"order_id": order_id, "total": 120, "owner": {"user_id": user_id}},
        "contact": "reach mia at mia.li@example.com or +1 (555) 123-4567",
    }


def order_trace() -> Trace:
    return run_trace(
        [
            call("find_order", user_id="mia_li_3668", order_id="ORD-991", api_key="sk-abc"),
            "Order ORD-991 of mia_li_3668 totals 120; contact mia.li@example.com.",
        ],
        input="I am mia_li_3668, where is my order ORD-991? My card is 4111 1111 1111 1111.",
        metadata={"user_id": "mia_li_3668", "session": {"token": "tok-123456"}},
        tools=[find_order],
    )


def hashing() -> Redactor:
    return Redactor(
        fields={"user_id": "hash", "order_id": "hash"},
        patterns={"email": "hash", "phone": "mask", "card": "mask", "api_key": "mask"},
        secret=SECRET,
    )


def test_field_rules_apply_at_any_depth_and_to_free_text() -> None:
    clean = hashing().redact_trace(order_trace())
    text = clean.to_json()
    for secret in ("mia_li_3668", "ORD-991", "sk-abc", "tok-123456", "mia.li@example.com"):
        assert secret not in text, secret
    assert "4111 1111 1111 1111" not in text
    # The phone number, in any of its parts (ids and timestamps may contain "555" by chance,
    # so look at the one field that held it).
    contact = clean.tool_results[0].value["contact"]
    assert "555" not in contact and "123-4567" not in contact
    assert "123-4567" not in text

    (call_,) = clean.tool_calls
    user = call_.arguments["user_id"]
    order = call_.arguments["order_id"]
    assert user.startswith("anon_") and len(user) == len("anon_") + 12
    assert call_.arguments["api_key"] == "***"  # a default credential field
    value = clean.tool_results[0].value
    assert value["order"]["owner"]["user_id"] == user  # nested, same pseudonym
    assert value["order"]["order_id"] == order
    assert value["order"]["total"] == 120  # not sensitive: untouched
    assert json.loads(clean.tool_results[0].content)["order"]["order_id"] == order
    # the values also disappear from the question, the answer and the metadata
    assert clean.input == (f"I am {user}, where is my order {order}? My card is ***.")
    email = value["contact"].split()[3]
    assert email.endswith("@redacted.invalid")
    assert clean.output == f"Order {order} of {user} totals 120; contact {email}."
    assert clean.metadata == {"user_id": user, "session": {"token": "***"}}
    assert json.loads(call_.raw_arguments or "{}") == call_.arguments or call_.raw_arguments is None


def test_hash_pseudonyms_are_stable_and_keep_types() -> None:
    redactor = Redactor(fields={"user_id": "hash"}, secret=SECRET)
    first = redactor.redact_value({"user_id": 123456, "name": "x"})
    again = redactor.redact_value({"deep": [{"user_id": 123456}]})
    other_secret = Redactor(fields={"user_id": "hash"}, secret="another").redact_value(
        {"user_id": 123456}
    )
    assert isinstance(first["user_id"], int)
    assert len(str(first["user_id"])) == 6
    assert first["user_id"] != 123456
    assert again["deep"][0]["user_id"] == first["user_id"]
    assert other_secret["user_id"] != first["user_id"]
    assert redactor.redact_value({"user_id": "u1"}) == redactor.redact_value({"user_id": "u1"})
    assert redactor.redact_value({"user_id": "bob@corp.com"})["user_id"].endswith(
        "@redacted.invalid"
    )


def test_mask_and_drop_actions() -> None:
    redactor = Redactor(fields={"address": "drop", "ssn": "mask", "age": "mask"})
    data = {"name": "Ann", "address": {"city": "Austin"}, "ssn": "123-45-6789", "age": 41}
    assert redactor.redact_value(data) == {"name": "Ann", "ssn": "***", "age": 0}


def test_field_names_match_case_insensitively_with_wildcards() -> None:
    redactor = Redactor(fields={"*_token": "mask", "User?d": "mask"}, default_fields=False)
    data = {"Refresh_TOKEN": "r1", "userid": "u", "user_id": "kept", "tokens": 3}
    assert redactor.redact_value(data) == {
        "Refresh_TOKEN": "***",
        "userid": "***",
        "user_id": "kept",
        "tokens": 3,
    }


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("write to ann.lee+work@mail.example.co.uk now", "write to *** now"),
        ("call +1 (555) 123-4567 or 555-123-4567", "call *** or ***"),
        ("mobile +8613800138000", "mobile ***"),
        ("card 4111-1111-1111-1111 ok", "card *** ok"),
        ("key sk-proj-abcdefghijklmnop1234 and ghp_abcdefghijklmnopqrstuvwx", "key *** and ***"),
        ("Authorization: Bearer abcdefghijklmnop.qrstuv", "Authorization: ***"),
        ("AKIAABCDEFGHIJKLMNOP in config", "*** in config"),
        # look-alikes that must stay
        ("flight HAT136 on 2024-05-20 at 10:30, total 1,234.56", None),
        ("order 4111111111111112 fails the Luhn check", None),
        ("version 1.2.3.4 of 12 items, zip 78750", None),
    ],
)
def test_builtin_patterns(text: str, expected: str | None) -> None:
    assert Redactor(default_fields=False).redact_text(text) == (
        text if expected is None else expected
    )


def test_key_value_text_and_custom_patterns() -> None:
    redactor = Redactor(
        fields={"user_id": "mask"},
        custom_patterns=[PatternRule("employee", r"\bE\d{4}\b", "mask")],
        default_fields=False,
    )
    assert redactor.redact_text("lookup failed for user_id=8812; see E1001") == (
        "lookup failed for user_id=***; see ***"
    )
    assert redactor.redact_text('{"user_id": "x9"} password: hunter2') == (
        '{"user_id": "***"} password: hunter2'
    )


def test_stop_detail_and_history_are_redacted() -> None:
    trace = run_trace(
        [call("find_order", user_id="u-777", order_id="o-1")] * 3,
        input="again",
        tools=[find_order],
    )
    trace.history = [
        Message.user("my email is zed@corp.io"),
        Message.assistant(None, [call("find_order", user_id="u-777", order_id="o-0")]),
    ]
    assert trace.stop_reason == "repeated_call"
    assert "u-777" in (trace.stop_detail or "")
    clean = Redactor(fields={"user_id": "mask"}).redact_trace(trace)
    text = clean.to_json()
    assert "u-777" not in text
    assert "zed@corp.io" not in text
    assert clean.history[0].content == "my email is ***"
    assert clean.history[1].tool_calls[0].arguments == {"user_id": "***", "order_id": "o-0"}


def test_from_yaml_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "redaction.yaml"
    path.write_text(
        "redaction:\n"
        "  secret_env: MY_SECRET\n"
        "  fields: {user_id: hash, address: drop}\n"
        "  patterns: {email: hash, card: mask}\n"
        "  custom:\n"
        "    - {name: employee, regex: 'E\\d{4}', action: mask}\n"
    )
    monkeypatch.setenv("MY_SECRET", SECRET)
    redactor = Redactor.from_file(path)
    assert [r.name for r in redactor.pattern_rules] == ["email", "card", "employee"]
    out = redactor.redact_value({"user_id": "u1", "address": "x", "note": "E1234 a@b.io"})
    assert set(out) == {"user_id", "note"}
    assert (
        out["user_id"]
        == Redactor(fields={"user_id": "hash"}, secret=SECRET).redact_value({"user_id": "u1"})[
            "user_id"
        ]
    )
    assert out["note"].startswith("*** ") and out["note"].endswith("@redacted.invalid")


def test_configuration_errors_say_what_to_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TOOLPROOF_REDACTION_SECRET", raising=False)
    with pytest.raises(ConfigError) as info:
        Redactor(fields={"user_id": "hash"})
    assert str(info.value) == (
        "redaction rules use the 'hash' action but no secret is set: pass Redactor(secret=...) "
        "or set the TOOLPROOF_REDACTION_SECRET environment variable (keep the same secret "
        "across runs so pseudonyms stay stable)"
    )
    with pytest.raises(ConfigError) as info:
        Redactor(fields={"user_id": "encrypt"})  # type: ignore[dict-item]
    assert str(info.value) == (
        "fields.user_id: unknown redaction action 'encrypt'; use one of: mask, drop, hash"
    )
    with pytest.raises(ConfigError, match="unknown redaction pattern 'iban'; built-in"):
        Redactor(patterns={"iban": "mask"})
    with pytest.raises(ConfigError, match="invalid regular expression"):
        Redactor(custom_patterns=[PatternRule("bad", "(", "mask")])
    path = tmp_path / "r.yaml"
    path.write_text("fields: {user_id: mask}\nfeilds: {}\n")
    with pytest.raises(ConfigError) as info:
        Redactor.from_file(path)
    assert str(info.value) == (
        f"{path}: unknown key(s) 'feilds'; valid keys: custom, default_fields, fields, mask, "
        "patterns, secret_env"
    )


# -- the property: no configured sensitive value reaches the database file -----------------

_alphabet = string.ascii_letters + string.digits
secrets_ = st.text(_alphabet, min_size=10, max_size=16).map(lambda s: "Z" + s)
fillers = st.text(string.ascii_lowercase + " ,.:", max_size=20)


@tool
def lookup(user_id: str, query: str, limit: int = 10) -> dict[str, Any]:
    """Look something up for a user.

    Args:
        user_id: The user.
        query: What to look up.
        limit: At most this many results.
    """
    return {}


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    user=secrets_,
    card_owner=secrets_,
    token=secrets_,
    email_name=st.text(string.ascii_lowercase, min_size=6, max_size=10),
    filler=fillers,
    action=st.sampled_from(["mask", "drop", "hash"]),
)
def test_no_sensitive_value_reaches_the_database_bytes(
    tmp_path_factory: pytest.TempPathFactory,
    user: str,
    card_owner: str,
    token: str,
    email_name: str,
    filler: str,
    action: str,
) -> None:
    email = f"{email_name}@example.org"
    nested = {"owner": {"user_id": card_owner, "note": filler}, "items": [{"api_key": token}]}
    script = [
        call("lookup", user_id=user, query=f"{filler} {email}"),
        f"Done for {user}{filler} (owner {card_owner}); mail {email}, key {token}.",
    ]
    agent_input = f"{filler}I am {user} and my key is {token}; mail {email}"

    def respond(**kwargs: Any) -> Any:
        return {"found": nested, "echo": f"user_id={user}", "by": kwargs["user_id"]}

    from toolproof import Agent, Toolset
    from toolproof.testing import ScriptedModel

    toolset = Toolset([lookup], mode="mock", mocks={"lookup": respond})
    agent = Agent(ScriptedModel(script), toolset, system_prompt=f"Serve {user} politely.")
    trace = agent.run_sync(
        agent_input, metadata={"user_id": user, "deep": nested}, tags=[f"user:{user}"]
    ).trace
    trace.history = [Message.user(f"earlier: user_id: {user}, {email}")]

    path = tmp_path_factory.mktemp("prop") / "traces.db"
    redactor = Redactor(
        fields={"user_id": action},  # type: ignore[dict-item]
        patterns={"email": action},  # type: ignore[dict-item]
        secret=SECRET,
    )
    recorder = Recorder(path, redactor=redactor)
    recorder.record(trace)
    assert recorder.flush(10)
    assert recorder.stats.written == 1
    # read the bytes while the WAL is still there (the recorder keeps its connection open)
    raw = b"".join(p.read_bytes() for p in path.parent.glob("traces.db*"))
    recorder.close()
    raw += b"".join(p.read_bytes() for p in path.parent.glob("traces.db*"))
    for value in (user, card_owner, token, email):
        assert value.encode() not in raw, value
    with TraceStore(path) as store:
        stored = store.get(trace.id)
    (stored_call,) = stored.tool_calls
    assert ("user_id" in stored_call.arguments) == (action != "drop")
    assert stored.tool_results[0].value["found"]["items"] == [{"api_key": "***"}]


def test_the_guide_lists_every_field_redaction_keeps() -> None:
    from toolproof.replay._redact_walk import STRUCTURAL_FIELDS

    guide = (Path(__file__).resolve().parents[2] / "docs" / "replay.md").read_text("utf-8")
    section = guide[guide.index("## Redaction") : guide.index("## The `traces` command")]
    for name in STRUCTURAL_FIELDS:
        short = name.replace("[]", "").split(".")
        assert f"`{short[-1]}`" in section or f"`{'.'.join(short[-2:])}`" in section, name
    assert "steps[].tool_results[].call_id" in STRUCTURAL_FIELDS
    assert not any(name.endswith(("content", "input", "metadata")) for name in STRUCTURAL_FIELDS)


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        ("E.164 +14155552671 and tel+14155552671", ("E.164 ", " and tel")),
        ("CN 13812345678, US 4155552671 or 1-415-555-2671", ("CN ", ", US ", " or ")),
        ("josé@exämple.com / 用户@例子.中国", (" / ",)),
        ("escaped jos\\u00e9@ex\\u00e4mple.com", ("escaped ",)),
        ("url ?to=ann.lee%40corp.example.com&x=1", ("url ?to=", "&x=1")),
        ("sk-proj-" + "aB3_-x" * 20 + " end", (" end",)),
        ("sk-ant-api03-" + "Zq9-_" * 18 + "AA" + " end", (" end",)),
        ("sk-svcacct-AbC123_xyz-" + "Q" * 30 + " end", (" end",)),
        ("qty 1 4111 1111 1111 1111 exp", ("qty 1 ", " exp")),
    ],
)
def test_current_secret_forms_are_caught_whole(text: str, kept: tuple[str, ...]) -> None:
    out = Redactor(default_fields=False).redact_text(text)
    assert "***" in out
    for piece in kept:
        assert piece in out
    residue = out
    for piece in kept:
        residue = residue.replace(piece, "", 1)
    assert set(residue.replace("***", "")) <= set(" "), (text, out)


def test_look_alikes_of_the_new_forms_stay() -> None:
    redactor = Redactor(default_fields=False)
    for text in (
        "pip install sk-learn-is-a-library",
        "epoch 1733040000 and 1733040000123 ms",
        "build 0123456789",
        "version 2.4.1 of anon_3fa9c01b2e7d",
    ):
        assert redactor.redact_text(text) == text
