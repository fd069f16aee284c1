"""The one matching vocabulary: values, argument sets, call trajectories, outside formats.

Every consumer decides "do these arguments match?" here: suite checks, the assertions and
mocks of ``toolproof.testing``, fixture files, replay rules, and the BFCL and agentevals
conversions. It sits in the data layer (it imports only ``toolproof.errors`` and
``toolproof._text``), so every layer above may use it.

- :mod:`._values`: compiled value matchers, JSON equality, how values are shown in reasons;
- :mod:`._specs`: value specs (YAML/JSON/Python) compiled into matchers;
- :mod:`._objects`: Python-side expectations (``ANY``, ``approx``, types, predicates) and
  :func:`compare`, plus the formatting of calls in messages;
- :mod:`._calls`: argument sets (``exact subset superset ignore``) and call trajectories
  (``strict in_order unordered subset superset``);
- :mod:`._adapters`: BFCL possible answers and agentevals-style trajectories.

The public names are re-exported by ``toolproof.evals`` and ``toolproof.testing``.
"""

from toolproof._matching._adapters import (
    Verdict,
    bfcl_expected_calls,
    match_bfcl,
    match_trajectory,
)
from toolproof._matching._calls import (
    ArgumentsMatcher,
    CallSpec,
    OrderMatcher,
    compile_arguments,
    compile_calls,
    compile_order,
    match_arguments,
    match_order,
)
from toolproof._matching._objects import ANY, approx, compare, format_call, mask_arguments
from toolproof._matching._specs import compile_value_matcher
from toolproof._matching._values import (
    APPROX_DEFAULT_TOL,
    ARGS_MODES,
    BFCL_IGNORED_CHARACTERS,
    ORDER_MODES,
    ArgsMode,
    Matcher,
    OrderMode,
    approx_matcher,
    json_equal,
)

__all__ = [
    "ANY",
    "APPROX_DEFAULT_TOL",
    "ARGS_MODES",
    "BFCL_IGNORED_CHARACTERS",
    "ORDER_MODES",
    "ArgsMode",
    "ArgumentsMatcher",
    "CallSpec",
    "Matcher",
    "OrderMatcher",
    "OrderMode",
    "Verdict",
    "approx",
    "approx_matcher",
    "bfcl_expected_calls",
    "compare",
    "compile_arguments",
    "compile_calls",
    "compile_order",
    "compile_value_matcher",
    "format_call",
    "json_equal",
    "mask_arguments",
    "match_arguments",
    "match_bfcl",
    "match_order",
    "match_trajectory",
]
