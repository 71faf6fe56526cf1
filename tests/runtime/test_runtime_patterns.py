"""Patterns and sequences in the per-event runtime.

The conformance cases pin the reference's output for a few apps; here the runtime is
checked more broadly. Random event sequences with random micro-batch cuts (each batch in a
freshly built runtime restored from the previous snapshot) are compared with small,
obviously correct models of the reference's semantics for a few pattern shapes, and with an
uncut run. Then the bounds on state, and behaviours of the reference that surprise (each
test says which reference class they come from).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eddy.lang import check
from eddy.runtime.group import Runtime, UnsupportedQuery, build_runtime
from eddy.runtime.model import InputEvent, sort_outputs
from eddy.runtime.pattern import PatternQueryRuntime

STREAMS = "define stream A (k int, v int);\ndefine stream B (k int, v int);\n"

Event = tuple[str, int, int, int]  # stream, timestamp, k, v
Row = tuple[int, tuple[Any, ...]]  # timestamp, data


def app(query: str, streams: str = STREAMS) -> str:
    return f"@app:playback\n{streams}@info(name='q')\n{query}\n"


def inputs(events: Sequence[Event]) -> list[InputEvent]:
    return [InputEvent(i, ts, stream, (k, v)) for i, (stream, ts, k, v) in enumerate(events)]


def run(text: str, events: Sequence[Event], cuts: Sequence[int] = (),
        target: str = "O", convert: Callable[[Sequence[Event]], list[InputEvent]] = inputs
        ) -> list[Row]:
    """The rows ``target`` receives, the input cut into micro-batches before each index in
    ``cuts``, each batch in a new runtime restored from the previous one's snapshot."""
    analyzed = check(text)
    given_events = convert(events)
    bounds = [0, *sorted(set(c for c in cuts if 0 < c < len(given_events))),
              len(given_events)]
    state = build_runtime(analyzed).snapshot()
    outputs = []
    for start, end in zip(bounds, bounds[1:]):
        runtime = build_runtime(analyzed)
        runtime.restore(state)
        outputs += runtime.process(given_events[start:end])
        state = runtime.snapshot()
    return [(o.ts, o.data) for o in sort_outputs(outputs) if o.target == target]


# -- reference models ------------------------------------------------------------------------

def model_followed_by(events: Sequence[Event], within: int | None = None,
                      rising: bool = False) -> list[Row]:
    """``every e1=A -> e2=B[k == e1.k (and v > e1.v)] (within t)``: each A waits; a B
    completes, in arrival order, every waiting A with its key (that it rises above), and
    those A are done; ``within`` drops the A that started more than ``t`` before the B."""
    waiting: list[tuple[int, int, int]] = []
    rows: list[Row] = []
    for stream, ts, k, v in events:
        if stream == "A":
            waiting.append((ts, k, v))
            continue
        if within is not None:
            waiting = [w for w in waiting if ts - w[0] <= within]
        done = [w for w in waiting if w[1] == k and (not rising or v > w[2])]
        rows += [(ts, (w[1], w[2], v)) for w in done]
        waiting = [w for w in waiting if w not in done]
    return rows


def model_same_stream(events: Sequence[Event]) -> list[Row]:
    """``every e1=A -> e2=A[k == e1.k]``: an A first completes the waiting A with its key,
    then waits itself (one event never fills both states of one match)."""
    waiting: list[tuple[int, int, int]] = []
    rows: list[Row] = []
    for stream, ts, k, v in events:
        if stream != "A":
            continue
        done = [w for w in waiting if w[1] == k]
        rows += [(ts, (w[2], v)) for w in done]
        waiting = [w for w in waiting if w[1] != k] + [(ts, k, v)]
    return rows


def model_sequence(events: Sequence[Event]) -> list[Row]:
    """``every e1=A, e2=B[v > e1.v]+, e3=A``: every event must continue the sequence or it
    ends; an A after one or more rising B completes it, and every A starts a new one."""
    started: int | None = None  # e1.v, waiting for its first B
    run: tuple[int, list[int]] | None = None  # e1.v and the B values so far
    rows: list[Row] = []
    for stream, ts, _, v in events:
        if stream == "A":
            if run is not None:
                rows.append((ts, (run[0], run[1][0], run[1][-1], v)))
            started, run = v, None
            continue
        if run is not None and v > run[0]:
            run[1].append(v)
        elif started is not None and v > started:
            run, started = (started, [v]), None
        else:
            run = started = None
    return rows


SHAPES = {
    "followed_by": ("from every e1=A -> e2=B[k == e1.k] "
                    "select e1.k as k, e1.v as v1, e2.v as v2 insert into O;",
                    model_followed_by),
    "within": ("from every e1=A -> e2=B[k == e1.k and v > e1.v] within 5 sec "
               "select e1.k as k, e1.v as v1, e2.v as v2 insert into O;",
               lambda events: model_followed_by(events, within=5000, rising=True)),
    "same_stream": ("from every e1=A -> e2=A[e1.k == k] select e1.v as v1, e2.v as v2 "
                    "insert into O;", model_same_stream),
    "sequence": ("from every e1=A, e2=B[v > e1.v]+, e3=A select e1.v as v1, "
                 "e2[0].v as first, e2[last].v as last, e3.v as v3 insert into O;",
                 model_sequence),
}

event_lists = st.lists(
    st.tuples(st.sampled_from("AB"), st.sampled_from([0, 0, 1000, 2000, 3000]),
              st.integers(0, 2), st.integers(0, 3)),
    max_size=40,
).map(lambda raw: _timestamps(raw))


def _timestamps(raw: list[tuple[str, int, int, int]]) -> list[Event]:
    ts, events = 0, []
    for stream, step, k, v in raw:
        ts += step
        events.append((stream, ts, k, v))
    return events


@settings(max_examples=150, deadline=None)
@given(shape=st.sampled_from(sorted(SHAPES)), events=event_lists,
       cuts=st.lists(st.integers(1, 39), max_size=6))
def test_random_inputs_match_the_model_however_cut(shape: str, events: list[Event],
                                                   cuts: list[int]) -> None:
    query, model = SHAPES[shape]
    text = app(query)
    whole = run(text, events)
    assert whole == model(events)
    assert run(text, events, cuts) == whole
    assert run(text, events, range(len(events))) == whole


# -- state stays bounded ---------------------------------------------------------------------

def test_within_keeps_pending_matches_bounded() -> None:
    """200k events, 10 ms apart, ``within 1 sec``: the partial matches that can no longer
    complete are dropped, so at most ~100 (one per event of the last second) wait, and the
    snapshot the Spark operator stores after each micro-batch (``runtime.snapshot()``)
    stays the same size over the run rather than growing with it."""
    text = app("from every e1=T -> e2=T[e1.room == room and (e1.temp + 5) <= temp] "
               "within 1 sec select e1.room, e1.temp as t1, e2.temp as t2 insert into O;",
               "define stream T (room int, temp double);\n")
    analyzed = check(text)
    rng = random.Random(1)
    state = build_runtime(analyzed).snapshot()
    peak = alerts = 0
    sizes: list[int] = []
    for start in range(0, 200_000, 5_000):
        runtime = build_runtime(analyzed)
        runtime.restore(state)
        for seq in range(start, start + 5_000, 500):
            batch = [InputEvent(i, i * 10, "T", (rng.randrange(50), rng.uniform(10, 30)))
                     for i in range(seq, seq + 500)]
            alerts += len(runtime.process(batch))
            peak = max(peak, _pattern(runtime).pending_count())
        state = runtime.snapshot()
        sizes.append(len(state))
    assert alerts > 10_000
    assert peak <= 105
    half = len(sizes) // 2
    # Flat: the second half of the run (1,000 s of event time) holds no more than the first.
    assert max(sizes[half:]) <= 1.25 * max(sizes[:half]), sizes
    assert max(sizes) < 50_000


def _pattern(runtime: Runtime) -> PatternQueryRuntime:
    query = runtime.queries["q"]
    assert isinstance(query, PatternQueryRuntime)
    return query


# -- the reference's surprising behaviours ---------------------------------------------------

def test_within_prunes_only_from_the_head_of_the_pending_list() -> None:
    """``StreamPreStateProcessor.expireEvents`` stops at the first pending match still in
    time, so a match queued behind it outlives ``within`` and may still complete."""
    text = app("from every e1=A -> e2=B[k == e1.k] -> e3=A[k == e1.k + 10] within 10 sec "
               "select e1.v as v1, e2.v as v2, e3.v as v3 insert into O;")
    events = [("A", 0, 1, 1), ("A", 5000, 2, 2),
              ("B", 6000, 2, 20), ("B", 7000, 1, 10),  # e3 waits: (A2, B) before (A1, B)
              ("A", 8000, 99, 0),  # both become pending for e3
              ("A", 12000, 11, 3)]  # A1 started 12 s ago, but (A2, B) is ahead and in time
    assert run(text, events) == [(12000, (1, 10, 3))]


def test_one_event_completing_several_matches_of_one_state_is_one_chunk() -> None:
    """A stream feeding several states (``PatternMultiProcessStreamReceiver``) delivers the
    outputs of one state's matches for one event together: a downstream aggregate sees one
    chunk and emits once. A stream feeding one state delivers them one by one."""
    downstream = "from O select count() as c insert into C;"
    same = app("from every e1=A -> e2=A[k == e1.k and v > e1.v] select e1.v as v "
               "insert into O;\n" + downstream)
    other = app("from every e1=A -> e2=B[k == e1.k and v > e1.v] select e1.v as v "
                "insert into O;\n" + downstream)
    events = [("A", 1, 1, 5), ("A", 2, 1, 1), ("A", 3, 1, 9)]
    assert run(same, events) == [(3, (5,)), (3, (1,))]
    assert run(same, events, target="C") == [(3, (2,))]
    events = [("A", 1, 1, 5), ("A", 2, 1, 1), ("B", 3, 1, 9)]
    assert run(other, events, target="C") == [(3, (1,)), (3, (2,))]


def test_count_pattern_emits_at_its_minimum_and_keeps_filling_the_match() -> None:
    """``CountPostStateProcessor``: a pattern's count hands the match on once, at its
    minimum; later events extend that same (shared) match while the next state waits."""
    text = app("from e1=A<2:4> -> e2=B select e1[0].v as v0, e1[3].v as v3, "
               "e1[last].v as last, e2.v as b insert into O;")
    events = [("A", 1, 0, 1), ("A", 2, 0, 2), ("A", 3, 0, 3), ("B", 4, 0, 9),
              ("A", 5, 0, 4), ("B", 6, 0, 8)]
    assert run(text, events) == [(4, (1, None, 3, 9))]


def test_own_last_inside_a_counting_filter_is_the_previous_event() -> None:
    """``ExpressionParser.parseVariable``: in ``e1``'s own filter ``e1[last]`` is not the
    event being tested (already appended) but the one before it."""
    text = app("from e1=A[e1[last] is null or v > e1[last].v]<3> "
               "select e1[0].v as a, e1[1].v as b, e1[2].v as c insert into O;")
    events = [("A", 1, 0, 1), ("A", 2, 0, 2), ("A", 3, 0, 0), ("A", 4, 0, 3)]
    assert run(text, events) == [(4, (1, 2, 3))]


def test_sequence_ending_in_a_count_never_completes() -> None:
    """``CountPostStateProcessor`` hands a sequence's match on without ever returning it,
    so a sequence whose last state counts (``e2=B+``) emits nothing."""
    text = app("from every e1=A, e2=B+ select e1.v as a, e2[0].v as b insert into O;")
    events = [("A", 1, 0, 1), ("B", 2, 0, 2), ("B", 3, 0, 3), ("A", 4, 0, 4)]
    assert run(text, events) == []


def test_absent_start_waits_from_the_first_event() -> None:
    """``not S for t`` first in a pattern starts waiting when the app starts, which in
    event time is its first event; an A inside the wait restarts it (A at 2 s: the wait
    ends at 4 s); without ``every`` the pattern completes once."""
    text = app("from not A for 2 sec -> e2=B select e2.v as v insert into O;")
    events = [("B", 1000, 0, 1), ("A", 2000, 0, 0), ("B", 3500, 0, 2), ("B", 4500, 0, 3),
              ("B", 5000, 0, 4)]
    assert run(text, events) == [(4500, (3,))]
    assert run(text, events, [1, 2, 3, 4]) == [(4500, (3,))]


def test_an_absent_side_of_a_logical_state_comes_first() -> None:
    """The reference's compiler rewrites ``T or not S for t`` as ``not S for t or T``
    (``SiddhiQLBaseVisitorImpl.visitLogical_absent_stateful_source``); only the first side
    arms the absent timer, so the written order must not matter."""
    streams = STREAMS + "define stream C (k int, v int);\n"
    for logical in ("e2=B[v > 20] or not C[v > 30] for 1 sec",
                    "not C[v > 30] for 1 sec or e2=B[v > 20]"):
        text = app(f"from e1=A -> {logical} select e1.v as a, e2.v as b insert into O;",
                   streams)
        events = [("A", 1000, 0, 1), ("B", 2500, 0, 5)]  # the timer (2 s) fires first
        assert run(text, events) == [(2000, (1, None))]


def test_a_counting_state_selected_without_an_index_is_the_list_of_its_values() -> None:
    """``CountPatternTestCase.testQuery21``: ``select e1.price`` of ``e1=S<2:5>`` is the
    reference's ``MultiValueVariableFunctionExecutor``, an OBJECT holding every event's
    value; an indexed reference stays a single value, and a filter reads the last event."""
    text = app("from e1=A[v > 20]<2:5> -> e2=B[v > 20 and v > e1.v] "
               "select e1.v as prices, e1[0].v as first, e2.v as b insert into O;")
    analyzed = check(text)
    assert [a.type.value for a in analyzed.streams["O"].attributes] == [
        "OBJECT", "INT", "INT"]
    events = [("A", 1, 0, 25), ("A", 2, 0, 47), ("A", 3, 0, 13), ("A", 4, 0, 48),
              ("B", 5, 0, 45), ("B", 6, 0, 55)]
    assert run(text, events) == [(6, ([25, 47, 48], 25, 55))]
    assert run(text, events, range(len(events))) == [(6, ([25, 47, 48], 25, 55))]
    # A count that may be empty (<0:n>) gives an empty list, as the reference's walk does.
    optional = app("from e1=A[v > 100]<0:2> -> e2=B select e1.v as vs, e2.v as b "
                   "insert into O;")
    assert run(optional, [("B", 1, 0, 7)]) == [(1, ([], 7))]


def test_in_table_conditions_inside_pattern_and_sequence_states() -> None:
    """``(T.k == k) in T`` in a state's filter reads the table when the event is tested
    (``ExpressionParser`` gives patterns the app's tables like any query), alongside the
    equality the pending matches are indexed by."""
    streams = STREAMS + "define stream Ban (k int);\ndefine table Banned (k int);\n"
    fill = "from Ban select k insert into Banned;\n"
    pattern = app(fill + "@info(name='p') from every e1=A[not ((Banned.k == k) in Banned)] "
                  "-> e2=B[k == e1.k and (Banned.k == e1.v) in Banned] "
                  "select e1.v as a, e2.v as b insert into O;", streams)
    events = [("Ban", 1, 2, 0), ("A", 2, 1, 2), ("A", 3, 2, 20), ("B", 4, 2, 5),
              ("A", 5, 3, 9), ("B", 6, 3, 7), ("Ban", 7, 9, 0), ("B", 8, 1, 6),
              ("B", 9, 3, 8)]
    # A(2, 20) is banned and never waits; A(1, 2) completes with the first B of its key
    # (its v, 2, is banned); A(3, 9) fails with B(3, 7) and completes once 9 is banned.
    assert run_banned(pattern, events) == [(8, (2, 6)), (9, (9, 8))]
    assert run_banned(pattern, events, [3, 6]) == run_banned(pattern, events)
    sequence = app(fill + "from every e1=A, e2=B[k == e1.k and (Banned.k == e1.v) in Banned] "
                   "select e1.v as a, e2.v as b insert into O;", streams)
    events = [("Ban", 1, 2, 0), ("A", 2, 1, 2), ("B", 3, 1, 5), ("A", 4, 3, 4),
              ("B", 5, 3, 6)]
    assert run_banned(sequence, events) == [(3, (2, 5))]


def run_banned(text: str, events: Sequence[Event], cuts: Sequence[int] = ()) -> list[Row]:
    """:func:`run` where stream ``Ban`` carries ``(k)`` only."""
    def convert(given: Sequence[Event]) -> list[InputEvent]:
        return [InputEvent(i, ts, s, (k,) if s == "Ban" else (k, v))
                for i, (s, ts, k, v) in enumerate(given)]
    return run(text, events, cuts, convert=convert)


def test_an_event_name_used_twice_reads_the_first_state_of_that_name() -> None:
    """The reference accepts a repeated event name (nothing checks it); ``e1.x`` resolves
    to the first state called ``e1`` (``ExpressionParser.parseVariable`` stops at the first
    match), while a bare attribute in a filter is the state's own."""
    text = app("from every e1=A -> e1=B[k == e1.k] select e1.v as v, e1.k as k "
               "insert into O;")
    events = [("A", 1, 1, 10), ("B", 2, 2, 5), ("B", 3, 1, 6)]
    assert run(text, events) == [(3, (10, 1))]


def test_unsupported_pattern_forms_name_the_reason() -> None:
    """Stream functions on a pattern state are refused with the reason."""
    text = app("from e1=A#log('x') -> e2=B select e1.v as v insert into O;")
    with pytest.raises(UnsupportedQuery, match="'log' in a pattern state"):
        build_runtime(check(text))
