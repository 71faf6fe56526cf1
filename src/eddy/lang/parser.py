"""SiddhiQL text to AST: lark's LALR(1) parser over ``siddhiql.lark``, plus syntax errors a
person can act on.

Why LALR with the contextual lexer: a 5,000-line app must validate in well under two
seconds, which rules out Earley. The grammar is conflict-free (``tests/lang/test_parser.py``
builds it in debug mode and checks), so lark never silently picks a shift over a reduce.

Keywords as names. SiddhiQL lets nearly every keyword be a name (``define stream S (time
long, events int, last double)``). Here the identifier terminal is always lexable, and lark
turns an identifier into a keyword only in parser states that accept that keyword; a word is
therefore a keyword exactly where one is expected, and a name everywhere else.

Leniencies over Siddhi's grammar, all harmless: definitions may follow queries; an app may
have no definitions; ``from S as s`` (an alias on a single stream); annotations on triggers
and functions; ``//`` comments; ``"`` inside '…' strings and tabs in strings; a ``null``
literal. Stricter where Siddhi's compiler, not its grammar, rejects: ``outer join`` without
left/right/full, weeks in an aggregation, a pattern of only absent streams, an attribute
defined twice. A sign goes before a number literal only (``-5``, not ``-a``), as in Siddhi.

Syntax errors are :class:`~eddy.lang.errors.SiddhiAppError` issues of kind ``"syntax"`` at
the offending token, as Siddhi's ANTLR parser reports them. After an error the parser skips
to the next ``;`` and carries on, so one run lists every error (up to :data:`MAX_ERRORS`).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from pathlib import Path
from typing import TypeVar

from lark import Lark, Token
from lark.exceptions import UnexpectedCharacters, UnexpectedInput, UnexpectedToken
from lark.lark import PostLex
from lark.lexer import PatternStr

from eddy.gcpause import gc_paused
from eddy.lang.ast import Expression, OnDemandQuery, SiddhiApp
from eddy.lang.errors import AppIssue, SiddhiAppError, Span, did_you_mean
from eddy.lang.transform import AstBuilder
from eddy.lang.transform_base import token_span

__all__ = ["GRAMMAR_PATH", "MAX_ERRORS", "parse", "parse_expression", "parse_on_demand"]

GRAMMAR_PATH = Path(__file__).with_name("siddhiql.lark")
MAX_ERRORS = 20
_STARTS = ["siddhi_app", "on_demand_query", "expression_only", "recover"]
_Built = TypeVar("_Built", SiddhiApp, OnDemandQuery, Expression)

# How expected tokens are named in messages, most useful first; the rest follow by name.
_TOKEN_CLASSES = {"ID": "a name", "QUOTED_ID": "a name", "STRING": "a string",
                  "INT": "an integer", "LONG": "a long", "FLOAT": "a float",
                  "DOUBLE": "a double", "SCRIPT": "a '{ … }' body", "$END": "end of input"}
_PREFERRED = ("an expression", "select", "insert", "delete", "update", "return", "output",
              "define", "from", "partition", "stream", "table", "window", "trigger", "function",
              "aggregation", "group", "having", "order", "limit", "offset", "join", "on",
              "within", "as", "')'", "']'", "','", "';'")
_MAX_LISTED = 10
# Sets of expected tokens that read better as one phrase.
_EXPRESSION_START = {"a name", "an integer", "a string", "not", "'('"}
_EXPRESSION_EXTRA = {"a long", "a float", "a double", "true", "false", "null", "'-'", "'+'",
                     "'#'", "'!'"}
_OPERATORS = {"and", "or", "in", "is", "'=='", "'!='", "'<'", "'<='", "'>'", "'>='", "'+'",
              "'-'", "'*'", "'/'", "'%'"}
_TIME_UNITS = {"millisec", "millisecond", "milliseconds", "sec", "second", "seconds", "min",
               "minute", "minutes", "hour", "hours", "day", "days", "week", "weeks", "month",
               "months", "year", "years"}
_CLOSERS = {")": "(", "]": "[", "}": "{"}
# Strings, quoted names and comments (skipped), brackets and ';' (tracked).
_SCAN = re.compile(r'"""[\s\S]*?"""|"[^"\r\n]*"|\'[^\'\r\n]*\'|`[^`]*`|--[^\n]*|//[^\n]*'
                   r'|/\*[\s\S]*?(?:\*/|\Z)|[()\[\]{};]')


class _KeywordsAsNames(PostLex):
    """Makes the identifier terminal lexable in every parser state (see the module doc)."""

    always_accept = ("ID",)

    def process(self, stream: Iterator[Token]) -> Iterator[Token]:
        return stream


@functools.cache
def _lark() -> Lark:
    """The parser, built once per process (and cached on disk by lark across processes)."""
    return Lark(GRAMMAR_PATH.read_text(encoding="utf-8"), parser="lalr", lexer="contextual",
                start=_STARTS, propagate_positions=True, maybe_placeholders=False,
                postlex=_KeywordsAsNames(), cache=True)


def parse(text: str, filename: str | None = None) -> SiddhiApp:
    """Parses a whole Siddhi app; raises SiddhiAppError listing every syntax error found."""
    return _parse(text, "siddhi_app", SiddhiApp, filename, recover=True)


def parse_on_demand(text: str) -> OnDemandQuery:
    """Parses an on-demand (store) query such as ``from T on T.k == 'a' select v;``."""
    return _parse(text, "on_demand_query", OnDemandQuery, None, recover=False)


def parse_expression(text: str) -> Expression:
    """Parses a single expression such as ``price * 2 > 10 and not ok``."""
    return _parse(text, "expression_only", Expression, None, recover=False)


def _parse(text: str, start: str, built: type[_Built], filename: str | None,
           recover: bool) -> _Built:
    """The AST that grammar rule ``start`` builds from ``text``; ``recover`` goes on after the
    first syntax error to report the later ones too."""
    with gc_paused():
        try:
            tree = _lark().parse(text, start=start)
        except UnexpectedInput as error:
            issues = [_issue(error, text, start)]
            if recover:
                issues += _later_issues(text, error)
            raise SiddhiAppError(issues, source=text, filename=filename) from None
        builder = AstBuilder()
        result = builder.build(tree)
        builder.finish()
    if builder.issues:
        issues = sorted(builder.issues, key=lambda i: (i.span.line, i.span.column))
        raise SiddhiAppError(issues, source=text, filename=filename)
    if not isinstance(result, built):
        raise AssertionError(f"rule {start!r} built a {type(result).__name__}, not a "
                             f"{built.__name__}")
    return result


# ---------------------------------------------------------------------------------------------
# Error recovery
# ---------------------------------------------------------------------------------------------

def _later_issues(text: str, first: UnexpectedInput) -> list[AppIssue]:
    """The errors after the first one: skip to the next ``;`` at bracket depth 0 and parse the
    rest as a list of statements (the text before is blanked so positions do not move)."""
    issues: list[AppIssue] = []
    position = _offset(first, text)
    while len(issues) < MAX_ERRORS - 1:
        resume = _next_statement(text, position)
        if resume is None:
            break
        rest = _blank_before(text, resume)
        try:
            _lark().parse(rest, start="recover")
            break
        except UnexpectedInput as error:
            issues.append(_issue(error, rest, "recover"))
            position = max(_offset(error, rest), resume)
    return issues


def _offset(error: UnexpectedInput, text: str) -> int:
    if isinstance(error, UnexpectedToken):
        if error.token.type == "$END":
            return len(text)
        return error.token.start_pos or 0
    return error.pos_in_stream or 0


def _next_statement(text: str, position: int) -> int | None:
    """The offset just after the first ``;`` at or after ``position`` outside brackets opened
    there, strings and comments; None at the end of the text."""
    depth = 0
    for match in _SCAN.finditer(text, position):
        symbol = match.group()
        if symbol in "([{":
            depth += 1
        elif symbol in ")]}":
            depth = max(0, depth - 1)
        elif symbol == ";" and depth == 0:
            return match.end()
    return None


def _blank_before(text: str, offset: int) -> str:
    head = re.sub(r"[^\n]", " ", text[:offset])
    return head + text[offset:]


# ---------------------------------------------------------------------------------------------
# Messages
# ---------------------------------------------------------------------------------------------

def _issue(error: UnexpectedInput, text: str, start: str) -> AppIssue:
    if isinstance(error, UnexpectedToken):
        return _unexpected_token(error, text, start)
    assert isinstance(error, UnexpectedCharacters)
    offset = error.pos_in_stream or 0
    char = text[offset] if offset < len(text) else ""
    span = Span(error.line, error.column - 1, error.line, error.column)
    if char in "'\"":
        return AppIssue("syntax", f"unclosed string: no closing {char} on this line", span,
                        'strings that span lines need triple quotes: """…"""')
    if char == "{":
        return AppIssue("syntax", "unclosed function body: this '{' has no matching '}'", span)
    return AppIssue("syntax", f"unexpected character {char!r}", span)


def _unexpected_token(error: UnexpectedToken, text: str, start: str) -> AppIssue:
    token = error.token
    at_end = token.type == "$END"
    span = _end_span(text) if at_end else token_span(token)
    found = "end of input" if at_end else f"'{token}'"
    expected = _expected(_acceptable(text, start, _offset(error, text)))
    message = f"unexpected {found}"
    hint: str | None = None
    opener = _unclosed_bracket(text, _offset(error, text), "" if at_end else str(token))
    if opener is not None:
        symbol, line, column = opener
        message += f": '{symbol}' opened at line {line} column {column} is not closed"
        hint = f"close it with '{_closer(symbol)}'"
    elif expected:
        message += f"; expected {_listing(expected)}"
        words = [e for e in expected if e.isalpha()]
        suggestion = did_you_mean(str(token), words) if token.type == "ID" else None
        if suggestion is not None:
            hint = f"did you mean '{suggestion}'?"
        elif token == ":" and re.search(r"@\s*app\s*$", text[:_offset(error, text)], re.I):
            hint = "@app:… annotations go first in the app, before any definition"
        elif "';'" in expected and not at_end:
            hint = "end the previous statement with ';'"
    return AppIssue("syntax", message, span, hint)


def _acceptable(text: str, start: str, offset: int) -> set[str]:
    """The terminals the parser could take at ``offset``. Asked again of a fresh parse, as
    LALR may already have made reductions on the bad token when it notices, which leaves a
    state that expects less than the text before the token allows."""
    interactive = _lark().parse_interactive(text, start=start)
    try:
        for token in interactive.iter_parse():
            if token.start_pos is not None and token.start_pos >= offset:
                break
    except UnexpectedInput:
        pass  # the same fault: the state is still the one before the bad token
    return set(interactive.accepts())  # type: ignore[no-untyped-call]


def _expected(names: set[str]) -> list[str]:
    """The tokens the parser could have taken, named for people, most useful first."""
    parser = _lark()
    shown: set[str] = set()
    for name in names:
        if name in _TOKEN_CLASSES:
            shown.add(_TOKEN_CLASSES[name])
            continue
        pattern = parser.get_terminal(name).pattern
        value = pattern.value if isinstance(pattern, PatternStr) else name
        shown.add(value.lower() if value.isalpha() else f"'{value}'")

    if _EXPRESSION_START <= shown:  # say "an expression" rather than how one can start
        shown = (shown - _EXPRESSION_START - _EXPRESSION_EXTRA) | {"an expression"}
    units = "a time unit" if "millisec" in shown else "sec, min, hour, day, month or year"
    for group, phrase in ((_OPERATORS, "an operator"), (_TIME_UNITS, units)):
        if len(shown & group) >= 4:
            shown = (shown - group) | {phrase}

    def rank(item: str) -> tuple[int, int, str]:
        if item in _PREFERRED:
            return 0, _PREFERRED.index(item), item
        kind = 1 if item.isalpha() else 3 if item.startswith("'") else 2 if " " in item else 4
        return kind, 0, item
    return sorted(shown, key=rank)


def _listing(items: list[str]) -> str:
    if len(items) <= 2:
        return " or ".join(items)
    more = ", …" if len(items) > _MAX_LISTED else ""
    return "one of: " + ", ".join(items[:_MAX_LISTED]) + more


def _end_span(text: str) -> Span:
    line = text.count("\n") + 1
    column = len(text) - (text.rfind("\n") + 1)
    return Span(line, column, line, column)


def _closer(opener: str) -> str:
    return {v: k for k, v in _CLOSERS.items()}[opener]


def _unclosed_bracket(text: str, offset: int, token: str) -> tuple[str, int, int] | None:
    """The innermost bracket left open before ``offset``, when the unexpected ``token`` is a
    closing bracket that does not match it, a ``;`` or the end of the input."""
    if token not in _CLOSERS and token not in ("", ";"):
        return None
    stack: list[int] = []
    for match in _SCAN.finditer(text, 0, offset):
        symbol = match.group()
        if symbol in "([{":
            stack.append(match.start())
        elif symbol in _CLOSERS and stack and text[stack[-1]] == _CLOSERS[symbol]:
            stack.pop()
    if not stack or (token in _CLOSERS and text[stack[-1]] == _CLOSERS[token]):
        return None
    start = stack[-1]
    line = text.count("\n", 0, start) + 1
    return text[start], line, start - (text.rfind("\n", 0, start) + 1)

