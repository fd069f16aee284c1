"""A safe arithmetic tool: parsed with ``ast``, evaluated by hand, bounded in size and work.

Every operation whose cost grows with its operands (``**``, ``*``, ``round`` with many
digits, int-to-float conversion) is checked before it runs, so no expression keeps the
event loop busy: the worst case is a few milliseconds.
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable
from typing import Any

from toolproof._tools import tool
from toolproof.errors import ToolError

__all__ = ["calculator"]

MAX_EXPRESSION_CHARS = 500
MAX_NODES = 200
MAX_INT_BITS = 4096  # about 1,233 decimal digits
MAX_ABS_FLOAT = 1e300
MAX_EXPONENT = 10_000
MAX_ROUND_DIGITS = 1_300  # more than the digits of the largest integer result
_TOO_LARGE = "the result is too large"

_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY: dict[type[ast.unaryop], Callable[[Any], Any]] = {
    ast.UAdd: operator.pos,
    ast.USub: operator.neg,
}
_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "abs": abs,
    "round": round,
    "min": min,
    "max": max,
    "sqrt": math.sqrt,
    "floor": math.floor,
    "ceil": math.ceil,
    "log": math.log,
    "log10": math.log10,
    "exp": math.exp,
    "sin": math.sin,
    "cos": math.cos,
    "tan": math.tan,
}
_CONSTANTS = {"pi": math.pi, "e": math.e}


def evaluate(expression: str) -> int | float:
    """Evaluate an arithmetic expression safely.

    Raises:
        ToolError: The expression is not arithmetic, too long, or its result too large.
    """
    text = expression.strip().replace("^", "**").replace("×", "*").replace("÷", "/")
    if not text:
        raise ToolError("the expression is empty")
    if len(text) > MAX_EXPRESSION_CHARS:
        raise ToolError(f"the expression is longer than {MAX_EXPRESSION_CHARS} characters")
    try:
        tree = ast.parse(text, mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        raise ToolError(f"not a valid arithmetic expression: {exc}") from None
    if sum(1 for _ in ast.walk(tree)) > MAX_NODES:
        raise ToolError(f"the expression has more than {MAX_NODES} parts")
    try:
        result: int | float = _check_size(_eval(tree.body))
        return result
    except ZeroDivisionError:
        raise ToolError("division by zero") from None
    except (OverflowError, MemoryError):
        raise ToolError("the result is too large") from None
    except (ValueError, TypeError) as exc:
        raise ToolError(f"cannot evaluate: {exc}") from None


def _eval(node: ast.expr) -> Any:
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return node.value
    if isinstance(node, ast.Name) and node.id in _CONSTANTS:
        return _CONSTANTS[node.id]
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_eval(node.operand))
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _eval(node.left), _eval(node.right)
        if isinstance(node.op, ast.Pow):
            _check_power(left, right)
        elif isinstance(node.op, ast.Mult):
            _check_product(left, right)
        result = _BINARY[type(node.op)](left, right)
        return _check_size(result)
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in _FUNCTIONS
        and not node.keywords
    ):
        arguments = [_eval(arg) for arg in node.args]
        if node.func.id == "round":
            _check_round(arguments)
        return _check_size(_FUNCTIONS[node.func.id](*arguments))
    allowed = "numbers, + - * / // % ** ( ), pi, e, " + ", ".join(sorted(_FUNCTIONS))
    raise ToolError(f"unsupported element '{ast.unparse(node)}'; allowed: {allowed}")


def _check_power(base: Any, exponent: Any) -> None:
    if isinstance(base, complex) or isinstance(exponent, complex):
        raise ToolError("complex numbers are not supported")
    if abs(base) in (0, 1):
        return
    if abs(exponent) > MAX_EXPONENT or (
        isinstance(base, int)
        and isinstance(exponent, int)
        and exponent > 0
        and (abs(base).bit_length() - 1) * exponent > MAX_INT_BITS
    ):
        raise ToolError(_TOO_LARGE)


def _check_product(left: Any, right: Any) -> None:
    """Refuse a product of integers whose result could not be returned (before computing it)."""
    if (
        isinstance(left, int)
        and isinstance(right, int)
        and left.bit_length() + right.bit_length() > MAX_INT_BITS + 1
    ):
        raise ToolError(_TOO_LARGE)


def _check_round(arguments: list[Any]) -> None:
    """``round(x, n)`` with a huge ``n`` costs time in ``n`` (``round(1, -10**7)``)."""
    if len(arguments) == 2 and isinstance(arguments[1], int):
        digits = arguments[1]
        if abs(digits) > MAX_ROUND_DIGITS:
            raise ToolError(
                f"round(x, n) takes n between -{MAX_ROUND_DIGITS} and {MAX_ROUND_DIGITS}, "
                f"got {_short(digits)}"
            )


def _short(number: int) -> str:
    """A number for a message, without converting a huge one to text in full."""
    if number.bit_length() > 64:
        sign = "-" if number < 0 else ""
        return f"{sign}a number of about {int(number.bit_length() * 0.30103)} digits"
    return str(number)


def _check_size(value: Any) -> Any:
    if isinstance(value, complex):
        raise ToolError("the result is not a real number")
    if isinstance(value, int) and value.bit_length() > MAX_INT_BITS:
        raise ToolError(_TOO_LARGE)
    if isinstance(value, float) and (math.isinf(value) or abs(value) > MAX_ABS_FLOAT):
        raise ToolError(_TOO_LARGE)
    return value


@tool
def calculator(expression: str) -> float | int:
    """Evaluate an arithmetic expression and return the number.

    Supports + - * / // % ** and parentheses, the constants pi and e, and abs, round, min,
    max, sqrt, floor, ceil, log, log10, exp, sin, cos, tan.

    Args:
        expression: The expression, for example "(123 * 45) / 3".
    """
    return evaluate(expression)
