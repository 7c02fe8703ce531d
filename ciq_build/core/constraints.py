"""CONSTRAINTS between PARAMS: ``ciq_tune_target(... CONSTRAINTS "BX*BY<=1024")``.

Each constraint is an expression over the PARAMS names; a configuration is
searched only when every one holds (Kernel Tuner's ``restrictions``). The
language is small and safe, never Python's ``eval``:

    integers, PARAMS names, ( ), + - * / %, < <= > >= == !=, and, or, not

with C's arithmetic on whole numbers (``/`` truncates, ``%`` keeps the
dividend's sign; a division by zero makes the constraint false) and Python's
precedence for the words (``not a < b`` is ``not (a < b)``). A comparison does
not chain: write ``A < B and B < C``. A value is true when it is not 0.

Syntax is checked once, by :func:`syntax_problem`, a left-to-right scan over
the rule book's ``constraint_*`` token patterns that the CMake module repeats
(``_ciq_rules_constraint_problem``), so configure refuses a malformed
constraint with the same verdict tune would (tests/core/test_rule_book_agreement.py).
The parser below accepts every token sequence the scan accepts.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ciq_build.core.declared import declared
from ciq_build.core.params import PARAM_PREFIX
from ciq_build.core.rules import RuleBook, load_rules, nearest
from ciq_build.errors import ConfigError

# The token kinds, tried in this order at each position (both readers).
TOKEN_PATTERNS = ("constraint_number", "constraint_name", "constraint_compare", "constraint_arithmetic",
                  "constraint_paren")
_WORDS = ("and", "or", "not")

# Binding powers: or < and < not < comparisons < + - < * / % < unary - +.
_BINARY = {"or": 1, "and": 2, "<": 4, "<=": 4, ">": 4, ">=": 4, "==": 4, "!=": 4,
           "+": 5, "-": 5, "*": 6, "/": 6, "%": 6}
_NOT_POWER = 3
_UNARY_POWER = 7


@dataclass(frozen=True)
class Token:
    kind: str  # number, name, word, compare, arithmetic, paren
    text: str


def tokenize(expression: str, rules: RuleBook | None = None) -> tuple[list[Token], str | None]:
    """The tokens of `expression` up to the first character no token starts with, and a problem
    text naming that character (None when every character is part of a token or a blank)."""
    rules = rules or load_rules()
    tokens: list[Token] = []
    position = 0
    while position < len(expression):
        if expression[position] in " \t":
            position += 1
            continue
        for pattern in TOKEN_PATTERNS:
            m = re.match(f"(?:{rules.patterns[pattern].regex.pattern})", expression[position:])
            if m is not None and m.group(0):
                text = m.group(0)
                kind = pattern.removeprefix("constraint_")
                if kind == "name" and text in _WORDS:
                    kind = "word"
                tokens.append(Token(kind, text))
                position += len(text)
                break
        else:
            return tokens, f"'{expression[position]}' at position {position + 1} is not part of the language"
    return tokens, None


def syntax_problem(expression: str, names: Sequence[str], rules: RuleBook | None = None) -> str | None:
    """Why `expression` is not a constraint over `names` (the PARAMS names), or None.

    A scan from left to right with two states: an operand is expected (at the
    start, after an operator, '(' or 'not') or an operator is; the first problem
    met, a character outside the language included, is the one reported. The
    CMake module's _ciq_rules_constraint_problem makes the same scan, message for message.
    """
    rules = rules or load_rules()
    length, max_length = len(expression.encode("utf-8", "surrogatepass")), rules.limit("constraint_length")
    if length > max_length:
        return f"it is {length} bytes long, more than {max_length}"
    max_depth = rules.limit("constraint_depth")
    tokens, lexing_problem = tokenize(expression, rules)
    if not tokens and lexing_problem is None:
        return "it is empty"
    expect_operand = True
    depth = 0
    signs = 0  # the signs and nots before the operand to come
    compared = [False]  # per parenthesis depth: a comparison since the last and/or
    for token in tokens:
        text = token.text
        if expect_operand:
            if token.kind == "number":
                expect_operand = False
            elif token.kind == "name":
                if text not in names:
                    guess = nearest(text, names)
                    hint = f" (did you mean {guess}?)" if guess else ""
                    return f"'{text}' is not one of the PARAMS ({', '.join(names) or 'none'}){hint}"
                expect_operand = False
            elif text == "(":
                depth += 1
                compared.append(False)
            elif text in ("not", "-", "+"):
                signs += 1
            else:
                return f"'{text}' where a number, a PARAMS name or '(' belongs"
            if depth + signs > max_depth:
                return f"it nests parentheses, signs and nots more than {max_depth} deep"
            if not expect_operand or text == "(":
                signs = 0
        else:
            if text == ")":
                if depth == 0:
                    return "')' without its '('"
                depth -= 1
                compared.pop()
            elif token.kind == "compare":
                if compared[-1]:
                    return f"comparisons do not chain ('{text}'); join them with and"
                compared[-1] = True
                expect_operand = True
            elif text in ("and", "or"):
                compared[-1] = False
                expect_operand = True
            elif token.kind == "arithmetic":
                expect_operand = True
            else:
                return f"'{text}' where an operator or ')' belongs"
    if lexing_problem is not None:
        return lexing_problem
    if expect_operand:
        return "it ends where a number, a PARAMS name or '(' belongs"
    if depth:
        return "a '(' is not closed"
    return None


Node = Callable[[Mapping[str, int]], int]


class _Parser:
    """Precedence climbing over tokens that syntax_problem accepted (so it never meets a malformed one)."""

    def __init__(self, tokens: list[Token]):
        self.tokens = tokens
        self.position = 0

    def _next(self) -> Token:
        token = self.tokens[self.position]
        self.position += 1
        return token

    def _peek(self) -> Token | None:
        return self.tokens[self.position] if self.position < len(self.tokens) else None

    def expression(self, power: int = 0) -> Node:
        left = self._operand()
        while (token := self._peek()) is not None and token.text in _BINARY and _BINARY[token.text] > power:
            self._next()
            right = self.expression(_BINARY[token.text])
            left = _binary(token.text, left, right)
        return left

    def _operand(self) -> Node:
        token = self._next()
        if token.kind == "number":
            value = int(token.text)
            return lambda env: value
        if token.kind == "name":
            name = token.text
            return lambda env: env[name]
        if token.text == "(":
            inner = self.expression()
            self._next()  # ')'
            return inner
        operand = self.expression(_NOT_POWER if token.text == "not" else _UNARY_POWER)
        if token.text == "not":
            return lambda env: int(not operand(env))
        if token.text == "-":
            return lambda env: -operand(env)
        return operand


class _DivisionByZero(Exception):
    pass


def _c_divide(a: int, b: int) -> int:
    if b == 0:
        raise _DivisionByZero
    quotient = abs(a) // abs(b)
    return quotient if (a < 0) == (b < 0) else -quotient


def _binary(op: str, left: Node, right: Node) -> Node:
    if op == "and":
        return lambda env: int(bool(left(env)) and bool(right(env)))
    if op == "or":
        return lambda env: int(bool(left(env)) or bool(right(env)))
    ops: dict[str, Callable[[int, int], int]] = {
        "+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b,
        "/": _c_divide, "%": lambda a, b: a - _c_divide(a, b) * b,
        "<": lambda a, b: int(a < b), "<=": lambda a, b: int(a <= b), ">": lambda a, b: int(a > b),
        ">=": lambda a, b: int(a >= b), "==": lambda a, b: int(a == b), "!=": lambda a, b: int(a != b),
    }
    function = ops[op]
    return lambda env: function(left(env), right(env))


def expression_over(expression: str, names: Sequence[str], what: str) -> Callable[[Mapping[str, int]], int | None]:
    """`expression` in this language over `names`, as a function of their values ({NAME: int}) that gives None
    for a division by zero; a ConfigError naming `what` (the keyword it was given to) where it is not one."""
    rules = load_rules()
    problem = syntax_problem(expression, names, rules)
    if problem is not None:
        raise ConfigError(f"{what} {expression!r}: {problem}")
    node = _Parser(tokenize(expression, rules)[0]).expression()

    def value(env: Mapping[str, int]) -> int | None:
        try:
            return node(env)
        except _DivisionByZero:
            return None
    return value


@dataclass(frozen=True)
class Constraints:
    """The target's CONSTRAINTS, parsed: `allows(params)` says whether a configuration may be searched."""

    expressions: tuple[str, ...]
    _nodes: tuple[Node, ...]

    def allows(self, params: Mapping[str, Any]) -> bool:
        """Whether every constraint holds for a configuration ({"param.NAME": value, ...})."""
        env: dict[str, int] = {}
        for key, value in params.items():
            if key.startswith(PARAM_PREFIX):
                env[key[len(PARAM_PREFIX):]] = value
        try:
            return all(node(env) for node in self._nodes)
        except _DivisionByZero:
            return False


def parse_constraints(expressions: Sequence[str], params: Mapping[str, Any], *,
                      setuptools: bool = False) -> Constraints | None:
    """The CONSTRAINTS over `params` ({"param.NAME": Param}); None without any.

    Every name a constraint uses must be a PARAMS name whose values are all whole numbers. `setuptools`: the
    constraints are a CudaExtension's ciq_constraints, which a mistake names (core/declared.py).
    """
    if not expressions:
        return None
    names = [key[len(PARAM_PREFIX):] for key in params if key.startswith(PARAM_PREFIX)]
    rules = load_rules()
    nodes = []
    for expression in expressions:
        problem = syntax_problem(expression, names, rules)
        if problem is not None:
            raise ConfigError(f"CONSTRAINTS {expression!r}: {problem}; fix it ({declared('CONSTRAINTS', setuptools)}).")
        tokens, _ = tokenize(expression, rules)
        for token in tokens:
            if token.kind == "name":
                values = params[PARAM_PREFIX + token.text].values()
                if not all(isinstance(v, int) and not isinstance(v, bool) for v in values):
                    raise ConfigError(
                        f"CONSTRAINTS {expression!r}: {token.text} takes values that are not whole numbers "
                        f"({values[:4]}); constraints compare whole numbers only.")
        nodes.append(_Parser(tokens).expression())
    return Constraints(tuple(expressions), tuple(nodes))
