"""Replay-rule and redaction-rule files: every problem at once, each naming its key.

And the adversary: any YAML-shaped value given to either reader ends in a rule set or one
``ConfigError`` (never another exception), quickly.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolproof.errors import ConfigError
from toolproof.replay import Redactor, ReplayRules


def test_replay_rules_report_every_problem() -> None:
    with pytest.raises(ConfigError) as info:
        ReplayRules.from_dict(
            {
                "order": "sometimes",
                "gate": 2,
                "mask": "user_id",
                "tools": {"search": {"forbid_extra_args": "no", "max_top_k": "x", "requird": 1}},
            }
        )
    assert info.value.problems == [
        "rules.tools.search: unknown key 'requird'; valid keys: required_args, bounds, "
        "forbid_extra_args, compare, ignore, max_<arg>, min_<arg>",
        "rules.tools.search.forbid_extra_args: expected true, false or warn, got 'no'",
        "rules.tools.search.max_top_k: expected a number, got 'x'",
        "rules.order: expected ignore, warn or fail, got 'sometimes'",
        "rules.mask: expected a list of argument names, got 'user_id'",
        "rules.gate: expected a failure rate between 0 and 1, got 2",
    ]
    assert str(info.value).startswith("invalid replay rules rules:\n  rules.tools.search: ")


def test_redaction_rules_report_every_problem() -> None:
    with pytest.raises(ConfigError) as info:
        Redactor.from_dict(
            {
                "mask": 3,
                "fields": {"user_id": "encrypt", "email": "hash", "ssn": "shred"},
                "custom": [{"name": "x", "regex": "a", "action": "burn"}, "E\\d+"],
            },
            where="r.yaml",
        )
    assert info.value.problems == [
        "r.yaml.mask: expected text, got 3",
        "r.yaml.fields.user_id: unknown redaction action 'encrypt'; use one of: mask, drop, hash",
        "r.yaml.fields.ssn: unknown redaction action 'shred'; use one of: mask, drop, hash",
        "r.yaml.custom[0].action: unknown redaction action 'burn'; use one of: mask, drop, hash",
        "r.yaml.custom[1]: expected {name: ..., regex: ..., action: ...}",
    ]


def test_custom_patterns_must_be_a_list() -> None:
    # Found by the property below: `custom: true` crashed with TypeError.
    with pytest.raises(ConfigError) as info:
        Redactor.from_dict({"custom": True})
    assert str(info.value) == (
        "redaction.custom: expected a list of {name: ..., regex: ..., action: ...}, got True"
    )


def test_one_problem_keeps_its_one_line_message() -> None:
    with pytest.raises(ConfigError) as info:
        Redactor.from_dict({"custom": [{"name": "x"}]})
    assert str(info.value) == "redaction.custom[0]: expected {name: ..., regex: ..., action: ...}"
    with pytest.raises(ConfigError) as info:
        ReplayRules.from_dict({"answer": {"grounded": True}})
    assert str(info.value) == (
        "rules.answer: expected {grounding: true|false, check_small_numbers: true|false}, "
        "got {'grounded': True}"
    )


yaml_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(
            st.sampled_from(
                [
                    "tools",
                    "order",
                    "gate",
                    "mask",
                    "aging",
                    "answer",
                    "fields",
                    "patterns",
                    "custom",
                    "regex",
                    "action",
                    "max_k",
                    "bounds",
                    "x",
                    "*",
                ]
            ),
            inner,
            max_size=5,
        )
    ),
    max_leaves=20,
)


@pytest.mark.timeout(300)
@settings(deadline=None, max_examples=150)
@given(value=yaml_values)
def test_any_value_is_rules_or_one_config_error(value: Any) -> None:
    for reader in (ReplayRules.from_dict, Redactor.from_dict):
        try:
            reader(value)
        except ConfigError as exc:
            message = str(exc)
            assert message
