"""Whatever text arrives, the front end answers with an app or a SiddhiAppError — nothing else.

Valid apps are mutated the way people break them (a token deleted, duplicated or swapped
with its neighbour, a prefix cut off) and checked, parsed, analysed and planned.
"""

from __future__ import annotations

import re

from conformance import load_cases
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from eddy import SiddhiAppError, check
from eddy.plan import build_plan

APPS = [c.app for c in load_cases() if c.expected_error is None]
TOKEN = re.compile(r"'[^'\n]*'|\"[^\"\n]*\"|\w+|\s+|.", re.S)


def _tokens(text: str) -> list[str]:
    return TOKEN.findall(text)


@st.composite
def mutated_apps(draw: st.DrawFn) -> str:
    tokens = _tokens(draw(st.sampled_from(APPS)))
    for _ in range(draw(st.integers(1, 3))):
        if len(tokens) < 2:
            break
        i = draw(st.integers(0, len(tokens) - 2))
        action = draw(st.sampled_from(["delete", "duplicate", "swap", "truncate", "insert"]))
        if action == "delete":
            del tokens[i]
        elif action == "duplicate":
            tokens.insert(i, tokens[i])
        elif action == "swap":
            tokens[i], tokens[i + 1] = tokens[i + 1], tokens[i]
        elif action == "truncate":
            tokens = tokens[:i]
        else:
            tokens.insert(i, draw(st.sampled_from(
                ["(", ")", "[", "]", ";", ",", "->", "every", "select", "from", "#window.",
                 "@info(name='x')", "'", "\"\"\"", "1e", "10 min", "not", "e1[", "#", "!"])))
    return "".join(tokens)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated_apps())
def test_only_siddhi_app_errors_escape(app: str) -> None:
    try:
        build_plan(check(app))
    except SiddhiAppError as error:
        assert error.kind in ("syntax", "semantic")
        assert error.line >= 1 and error.column >= 0, error
        assert error.message
        error.render()
