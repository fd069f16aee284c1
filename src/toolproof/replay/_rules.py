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
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from toolproof.errors import ConfigError
from toolproof.replay._time import format_duration, parse_duration

if TYPE_CHECKING:
    from toolproof._matching import Matcher
    from toolproof.replay._rules_model import ToolRuleSpec

__all__ = ["Aging", "ReplayRules", "ToolRule"]

ExtraArgs = Literal["fail", "warn", "accept"]
Severity = Literal["ignore", "warn", "fail"]

DEFAULT_MASK = ("api_key", "password", "token", "user_id")


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
        from pydantic import ValidationError

        from toolproof._filemodel import load_error
        from toolproof.replay._rules_model import ToolRuleSpec

        try:
            spec = ToolRuleSpec.model_validate(data)
        except ValidationError as exc:
            raise load_error(exc, where, "rule", listed=False) from None
        return cls._from_spec(spec, where)

    @classmethod
    def _from_spec(cls, spec: ToolRuleSpec, where: str) -> ToolRule:
        from toolproof._matching import compile_value_matcher

        specs: dict[str, Any] = {}
        for key, value in spec.shorthand.items():
            bound, arg = key.split("_", 1)
            specs.setdefault(arg, {})[bound] = value
        for arg, bound_spec in (spec.bounds or {}).items():
            if arg in specs and isinstance(bound_spec, Mapping):
                specs[arg] = {**specs[arg], **bound_spec}
            else:
                specs[arg] = bound_spec
        bounds = {
            arg: compile_value_matcher(bound_spec, where=f"{where}.bounds.{arg}")
            for arg, bound_spec in specs.items()
        }
        extra = spec.forbid_extra_args
        extra_args: ExtraArgs = (
            "fail"
            if extra in (True, "fail")
            else "accept"
            if extra in (False, "accept")
            else "warn"
        )
        return cls(
            required_args=tuple(spec.required_args or ()),
            bounds=bounds,
            extra_args=extra_args,
            compare=tuple(spec.compare or ()),
            ignore=tuple(spec.ignore or ()),
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
    mask: tuple[str, ...] = DEFAULT_MASK
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
        from pydantic import ValidationError

        from toolproof._filemodel import load_error
        from toolproof.replay._rules_model import ReplayRulesFile

        data = data or {}
        if not isinstance(data, Mapping):
            raise ConfigError(f"{where}: expected a mapping of replay rules, got {data!r}")
        try:
            spec = ReplayRulesFile.model_validate(data)
        except ValidationError as exc:
            raise load_error(exc, where, "replay rules") from None
        tools = {
            name: ToolRule._from_spec(rule, f"{where}.tools.{name}")
            for name, rule in (spec.tools or {}).items()
        }
        raw = {str(name): dict(rule or {}) for name, rule in (data.get("tools") or {}).items()}
        answer = spec.answer or {}
        aging = spec.aging or {}
        return cls(
            tools=tools,
            grounding=bool(answer.get("grounding", True)),
            check_small_numbers=bool(answer.get("check_small_numbers", True)),
            order=spec.order,
            mask=tuple(spec.mask or ()) or DEFAULT_MASK,
            gate=spec.gate,
            aging=Aging.parse(aging.get("half_life"), aging.get("max_age")),
            _raw=raw,
        )

    @classmethod
    def from_file(cls, path: str | Path) -> ReplayRules:
        """Read rules from a YAML (or JSON) file.

        Raises:
            ConfigError: The file cannot be read or holds invalid rules.
        """
        from toolproof._yaml import load_file

        path = Path(path)
        data = load_file(path, "replay rules")
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
