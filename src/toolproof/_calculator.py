"""A safe arithmetic tool: parsed with ``ast``, evaluated by hand, bounded in size and work."""

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
        result: int | float = _eval(tree.body)
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
        result = _BINARY[type(node.op)](left, right)
        return _check_size(result)
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in _FUNCTIONS
        and not node.keywords
    ):
        return _check_size(_FUNCTIONS[node.func.id](*(_eval(arg) for arg in node.args)))
    allowed = "numbers, + - * / // % ** ( ), pi, e, " + ", ".join(sorted(_FUNCTIONS))
    raise ToolError(f"unsupported element '{ast.unparse(node)}'; allowed: {allowed}")


def _check_power(base: Any, exponent: Any) -> None:
    if isinstance(base, complex) or isinstance(exponent, complex):
        raise ToolError("complex numbers are not supported")
    if abs(base) in (0, 1):
        return
    if abs(exponent) > 10_000 or (
        isinstance(base, int)
        and isinstance(exponent, int)
        and exponent > 0
        and abs(base).bit_length() * exponent > MAX_INT_BITS
    ):
        raise ToolError("the result is too large")


def _check_size(value: Any) -> Any:
    if isinstance(value, complex):
        raise ToolError("the result is not a real number")
    if isinstance(value, int) and value.bit_length() > MAX_INT_BITS:
        raise ToolError("the result is too large")
    if isinstance(value, float) and (math.isinf(value) or abs(value) > MAX_ABS_FLOAT):
        raise ToolError("the result is too large")
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
