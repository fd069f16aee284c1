"""Grading rules of a replay: per-tool argument rules, answer checks, gate and aging.

The YAML form (every key optional)::

    tools:
      search_docs:
        required_args: [query, top_k]   # a new call without them fails
        max_top_k: 20                   # shorthand for bounds: {top_k: {max: 20}}
        bounds: {top_k: {range: [1, 20]}, query: {type: string}}   # matcher specs
        forbid_extra_args: warn         # true: fail, warn (default): warn, false: accept
        compare: [query]                # arguments whose change fails the sample
        ignore: [request_id]            # arguments never compared nor used to find fixtures
      "*": {forbid_extra_args: true}    # defaults for every tool (globs allowed)
    answer:
      grounding: true                   # numbers and ids must come from input or tool results
      check_small_numbers: true         # false: skip integers 0-10
    order: warn                         # same calls in another order: ignore | warn | fail
    mask: [user_id, order_id]           # argument names never shown in messages
    gate: 0.05                          # fail the replay above this failure rate
    aging: {half_life: 30d, max_age: 90d}
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from toolproof.errors import ConfigError
from toolproof.replay._time import format_duration, parse_duration

if TYPE_CHECKING:
    from toolproof._matching import Matcher

__all__ = ["Aging", "ReplayRules", "ToolRule"]

ExtraArgs = Literal["fail", "warn", "accept"]
Severity = Literal["ignore", "warn", "fail"]

_TOOL_KEYS = ("required_args", "bounds", "forbid_extra_args", "compare", "ignore")
_TOP_KEYS = ("version", "tools", "answer", "order", "mask", "gate", "aging")
_DEFAULT_MASK = ("api_key", "password", "token", "user_id")
_BOUND_SHORTHAND = re.compile(r"^(max|min)_(.+)$")


@dataclass(slots=True)
class ToolRule:
    """How the calls of one tool are graded.

    Attributes:
        required_args: Arguments every new call must have.
        bounds: Per argument, a matcher its value must satisfy when present (compiled from
            a spec such as ``{"range": [1, 20]}``; see ``toolproof.evals.compile_value_matcher``).
        extra_args: What an argument the recorded call did not have costs: ``"fail"``,
            ``"warn"`` or ``"accept"`` (``forbid_extra_args: true / warn / false``).
        compare: Arguments whose changed value fails the sample (other changes warn).
        ignore: Arguments that are never compared and never pick a fixture.
        specs: The bound specs as written (for reports).
    """

    required_args: tuple[str, ...] = ()
    bounds: dict[str, Matcher] = field(default_factory=dict)
    extra_args: ExtraArgs = "warn"
    compare: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    specs: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, where: str = "rule") -> ToolRule:
        """Build a rule from its YAML form (see the module docstring).

        Raises:
            ConfigError: An unknown key, a malformed list, or an invalid bound spec.
        """
        from toolproof._matching import compile_value_matcher

        if not isinstance(data, Mapping):
            raise ConfigError(f"{where}: expected a mapping of rule settings, got {data!r}")
        specs: dict[str, Any] = {}
        problems: list[str] = []
        for key, value in data.items():
            match = _BOUND_SHORTHAND.match(str(key))
            if key in _TOOL_KEYS:
                continue
            if match is not None:
                bound, arg = match.groups()
                if isinstance(value, bool) or not isinstance(value, (int, float)):
                    problems.append(f"{where}.{key}: expected a number, got {value!r}")
                    continue
                spec = specs.setdefault(arg, {})
                if not isinstance(spec, dict):
                    problems.append(f"{where}.{key}: {arg} already has a bound spec")
                    continue
                spec[bound] = value
            else:
                problems.append(
                    f"{where}: unknown key {key!r}; valid keys: {', '.join(_TOOL_KEYS)}, "
                    "max_<arg>, min_<arg>"
                )
        bounds_data = data.get("bounds") or {}
        if not isinstance(bounds_data, Mapping):
            problems.append(f"{where}.bounds: expected a mapping of argument to matcher spec")
            bounds_data = {}
        for arg, spec in bounds_data.items():
            if arg in specs and isinstance(spec, Mapping):
                specs[arg] = {**specs[arg], **spec}
            else:
                specs[arg] = spec
        if problems:
            raise ConfigError(
                problems[0] if len(problems) == 1 else f"invalid rule {where}", problems
            )
        bounds = {
            arg: compile_value_matcher(spec, where=f"{where}.bounds.{arg}")
            for arg, spec in specs.items()
        }
        extra = data.get("forbid_extra_args", "warn")
        extra_args: ExtraArgs
        if extra is True or extra == "fail":
            extra_args = "fail"
        elif extra is False or extra == "accept":
            extra_args = "accept"
        elif extra == "warn":
            extra_args = "warn"
        else:
            raise ConfigError(
                f"{where}.forbid_extra_args: expected true, false or warn, got {extra!r}"
            )
        return cls(
            required_args=_names(data.get("required_args"), f"{where}.required_args"),
            bounds=bounds,
            extra_args=extra_args,
            compare=_names(data.get("compare"), f"{where}.compare"),
            ignore=_names(data.get("ignore"), f"{where}.ignore"),
            specs=specs,
        )

    def describe(self) -> dict[str, Any]:
        """The rule in its YAML form (for reports)."""
        out: dict[str, Any] = {}
        if self.required_args:
            out["required_args"] = list(self.required_args)
        if self.specs:
            out["bounds"] = self.specs
        if self.extra_args != "warn":
            out["forbid_extra_args"] = self.extra_args == "fail"
        if self.compare:
            out["compare"] = list(self.compare)
        if self.ignore:
            out["ignore"] = list(self.ignore)
        return out


@dataclass(frozen=True, slots=True)
class Aging:
    """How sample weights decay with age.

    Attributes:
        half_life: Seconds after which a sample weighs half as much (``None``: no decay).
        max_age: Seconds after which a sample is no longer replayed (``None``: never).
    """

    half_life: float | None = None
    max_age: float | None = None

    @classmethod
    def parse(
        cls, half_life: str | float | None = None, max_age: str | float | None = None
    ) -> Aging:
        """Build from durations such as ``"30d"`` (or seconds).

        Raises:
            UserError: A duration is malformed or not positive.
        """
        return cls(
            half_life=None if half_life is None else parse_duration(half_life, where="half_life"),
            max_age=None if max_age is None else parse_duration(max_age, where="max_age"),
        )

    def weight(self, age_seconds: float) -> float:
        """The weight of a sample this old (1.0 when there is no half-life)."""
        if self.half_life is None:
            return 1.0
        return float(0.5 ** (max(age_seconds, 0.0) / self.half_life))

    def describe(self) -> dict[str, str]:
        """The settings as readable durations."""
        out = {}
        if self.half_life is not None:
            out["half_life"] = format_duration(self.half_life)
        if self.max_age is not None:
            out["max_age"] = format_duration(self.max_age)
        return out


@dataclass(slots=True)
class ReplayRules:
    """Everything that decides how replayed samples are graded.

    Attributes:
        tools: Rules by tool name; keys may be globs (``"search_*"``, ``"*"``). A tool's
            rule is its exact entry merged over the matching globs, in file order.
        grounding: Fail answers with numbers or ids that appear in no evidence.
        check_small_numbers: Check integers from 0 to 10 too (the default; a count is
            also grounded by the length of a list in a tool result or in the answer).
        order: What the same calls in another order cost.
        mask: Argument names whose values are never shown in messages.
        gate: Default failure-rate threshold of the release gate (``None``: no gate).
        aging: Default sample aging.
    """

    tools: dict[str, ToolRule] = field(default_factory=dict)
    grounding: bool = True
    check_small_numbers: bool = True
    order: Severity = "warn"
    mask: tuple[str, ...] = _DEFAULT_MASK
    gate: float | None = None
    aging: Aging = field(default_factory=Aging)
    _raw: dict[str, dict[str, Any]] = field(default_factory=dict, repr=False)
    _resolved: dict[str, ToolRule] = field(default_factory=dict, repr=False)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None, *, where: str = "rules") -> ReplayRules:
        """Build rules from their YAML form (see the module docstring).

        Raises:
            ConfigError: Every problem found, each naming its key.
        """
        data = data or {}
        if not isinstance(data, Mapping):
            raise ConfigError(f"{where}: expected a mapping of replay rules, got {data!r}")
        unknown = [k for k in data if k not in _TOP_KEYS]
        if unknown:
            raise ConfigError(
                f"{where}: unknown key(s) {', '.join(map(repr, unknown))}; "
                f"valid keys: {', '.join(_TOP_KEYS)}"
            )
        tools_data = data.get("tools") or {}
        if not isinstance(tools_data, Mapping):
            raise ConfigError(f"{where}.tools: expected a mapping of tool name to rule")
        raw: dict[str, dict[str, Any]] = {}
        tools: dict[str, ToolRule] = {}
        for name, rule in tools_data.items():
            rule_where = f"{where}.tools.{name}"
            tools[str(name)] = ToolRule.from_dict(rule or {}, where=rule_where)
            raw[str(name)] = dict(rule or {})
        answer = data.get("answer") or {}
        if not isinstance(answer, Mapping) or set(answer) - {"grounding", "check_small_numbers"}:
            raise ConfigError(
                f"{where}.answer: expected {{grounding: true|false, check_small_numbers: "
                f"true|false}}, got {answer!r}"
            )
        order = data.get("order", "warn")
        if order not in ("ignore", "warn", "fail"):
            raise ConfigError(f"{where}.order: expected ignore, warn or fail, got {order!r}")
        gate = data.get("gate")
        if gate is not None and (
            isinstance(gate, bool) or not isinstance(gate, (int, float)) or not 0 <= gate <= 1
        ):
            raise ConfigError(
                f"{where}.gate: expected a failure rate between 0 and 1, got {gate!r}"
            )
        aging_data = data.get("aging") or {}
        if not isinstance(aging_data, Mapping) or set(aging_data) - {"half_life", "max_age"}:
            raise ConfigError(f"{where}.aging: expected {{half_life: 30d, max_age: 90d}}")
        try:
            aging = Aging.parse(aging_data.get("half_life"), aging_data.get("max_age"))
        except Exception as exc:
            raise ConfigError(f"{where}.aging: {exc}") from None
        return cls(
            tools=tools,
            grounding=bool(answer.get("grounding", True)),
            check_small_numbers=bool(answer.get("check_small_numbers", True)),
            order=order,
            mask=_names(data.get("mask"), f"{where}.mask") or _DEFAULT_MASK,
            gate=None if gate is None else float(gate),
            aging=aging,
            _raw=raw,
        )

    @classmethod
    def from_file(cls, path: str | Path) -> ReplayRules:
        """Read rules from a YAML (or JSON) file.

        Raises:
            ConfigError: The file cannot be read or holds invalid rules.
        """
        import yaml

        from toolproof._yaml import safe_load

        path = Path(path)
        try:
            data = safe_load(path.read_text(encoding="utf-8"), path)
        except OSError as exc:
            raise ConfigError(f"cannot read replay rules {path}: {exc.strerror}") from exc
        except yaml.YAMLError as exc:
            raise ConfigError(f"{path}: invalid YAML ({exc})") from exc
        return cls.from_dict(data, where=str(path))

    def rule_for(self, tool: str) -> ToolRule:
        """The rule that applies to ``tool`` (globs merged under its exact entry)."""
        try:
            return self._resolved[tool]
        except KeyError:
            pass
        matching = [name for name in self.tools if name != tool and fnmatch.fnmatchcase(tool, name)]
        if tool in self.tools:
            matching.append(tool)
        if not matching:
            rule = ToolRule()
        elif len(matching) == 1 or not self._raw:
            rule = self.tools[matching[-1]]
        else:
            merged: dict[str, Any] = {}
            for name in matching:
                merged.update(self._raw[name])
            rule = ToolRule.from_dict(merged, where=f"rules for {tool}")
        self._resolved[tool] = rule
        return rule


def _names(value: Any, where: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise ConfigError(f"{where}: expected a list of argument names, got {value!r}")
    if not all(isinstance(item, str) for item in value):
        raise ConfigError(f"{where}: expected a list of argument names, got {value!r}")
    return tuple(value)
