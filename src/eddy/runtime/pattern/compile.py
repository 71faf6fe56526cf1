"""Compiling a pattern or sequence into its state machine: the reference's
``StateInputStreamParser`` and inner state runtimes.

Each stream state gets a state id in the reference's parse order (``A -> B``: A first; in
``A and B`` the *right* side first), which decides what ``every`` clears, which states'
events ``within`` measures from and the order of everything below. The inner runtimes
(:class:`Inner`) keep the reference's tree of ``next`` / ``every`` / ``logical`` / ``count``
runtimes, because sequences reset and update their states through it before every event
(``resetAndUpdate``), in its order.

The result, :class:`Machine`, holds the processors; its state is theirs, plain data.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from eddy.lang import ast
from eddy.lang.semantic import AnalyzedApp, QueryInfo
from eddy.lang.walk import walk_states
from eddy.runtime.context import Context, Scheduler
from eddy.runtime.pattern.absent import (
    AbsentLogicalPost,
    AbsentLogicalPre,
    AbsentStreamPost,
    AbsentStreamPre,
)
from eddy.runtime.pattern.index import IndexedStreamPre, equality_keys
from eddy.runtime.pattern.logical import LogicalPost, LogicalPre
from eddy.runtime.pattern.processors import (
    MAX_COUNT,
    Condition,
    CountPost,
    CountPre,
    StreamPost,
    StreamPre,
)
from eddy.runtime.pattern.references import Current, PatternExpressions

SchedulerIndex = Callable[[str], int]
Absent = AbsentStreamPre | AbsentLogicalPre


def state_count(state: ast.StateElement) -> int:
    """How many slots a match has: one per stream or absent state."""
    return sum(isinstance(s, (ast.StreamStateElement, ast.AbsentStreamStateElement))
               for s in walk_states(state))


def absent_scheduler_keys(query_id: str, state: ast.StateElement) -> list[str]:
    """The scheduler names of a pattern's absent states, in the order the reference creates
    them (a logical state creates its left side's, then its right side's)."""
    keys: list[str] = []

    def visit(element: ast.StateElement) -> None:
        if isinstance(element, ast.AbsentStreamStateElement):
            keys.append(f"absent:{query_id}:{len(keys)}")
        elif isinstance(element, ast.LogicalStateElement):
            for side in logical_sides(element):
                if isinstance(side, ast.AbsentStreamStateElement):
                    keys.append(f"absent:{query_id}:{len(keys)}")
        elif isinstance(element, ast.NextStateElement):
            visit(element.element)
            visit(element.next)
        elif isinstance(element, (ast.EveryStateElement, ast.CountStateElement)):
            visit(element.element)

    visit(state)
    return keys


def logical_sides(element: ast.LogicalStateElement) -> tuple[ast.StateElement, ast.StateElement]:
    """The two sides as the reference's compiler orders them: an absent side first when
    only one side is absent (``A and not B`` is ``not B and A``), else as written."""
    left, right = element.left, element.right
    if isinstance(right, ast.AbsentStreamStateElement) and \
            not isinstance(left, ast.AbsentStreamStateElement):
        return right, left
    return left, right


# -- the inner state runtimes ----------------------------------------------------------------

class Inner:
    """One node of the reference's inner-state-runtime tree (a single stream state here)."""

    def __init__(self, first: StreamPre, last: StreamPost, stream: str | None = None) -> None:
        self.first = first
        self.last = last
        self.stream = stream

    def connect_selector(self) -> None:
        self.last.selects = True

    def setup(self, receivers: list[tuple[str, StreamPre]]) -> None:
        assert self.stream is not None
        receivers.append((self.stream, self.first))

    def init(self) -> None:
        self.first.init()

    def reset(self) -> None:
        self.first.reset_state()

    def update(self) -> None:
        self.first.update_state()


class NextInner(Inner):
    def __init__(self, current: Inner, following: Inner) -> None:
        super().__init__(current.first, following.last)
        self.current, self.following = current, following

    def connect_selector(self) -> None:
        self.following.connect_selector()

    def setup(self, receivers: list[tuple[str, StreamPre]]) -> None:
        self.current.setup(receivers)
        self.following.setup(receivers)

    def init(self) -> None:
        self.current.init()
        self.following.init()

    def reset(self) -> None:
        self.following.reset()
        self.current.reset()

    def update(self) -> None:
        self.current.update()
        self.following.update()


class EveryInner(Inner):
    def __init__(self, inner: Inner) -> None:
        super().__init__(inner.first, inner.last)
        self.inner = inner

    def connect_selector(self) -> None:
        self.inner.connect_selector()

    def setup(self, receivers: list[tuple[str, StreamPre]]) -> None:
        self.inner.setup(receivers)

    def init(self) -> None:
        self.inner.init()


class LogicalInner(Inner):
    def __init__(self, left: Inner, right: Inner) -> None:
        super().__init__(left.first, right.last)
        self.left, self.right = left, right

    def connect_selector(self) -> None:
        self.right.connect_selector()
        self.left.connect_selector()

    def setup(self, receivers: list[tuple[str, StreamPre]]) -> None:
        self.right.setup(receivers)
        self.left.setup(receivers)

    def init(self) -> None:
        self.right.init()
        self.left.init()

    def reset(self) -> None:
        self.right.reset()

    def update(self) -> None:
        self.right.update()


# -- the machine ----------------------------------------------------------------------------

class Machine:
    """The processors of one pattern query and how events reach them.

    ``receivers`` lists, per input stream, the states that stream feeds, in the reference's
    setup order; ``absents`` the absent states with their schedulers, in creation order.
    """

    def __init__(self, sequence: bool, inner: Inner, pres: list[StreamPre],
                 posts: list[StreamPost], absents: list[tuple[Absent, Scheduler]]) -> None:
        self.sequence = sequence
        self.inner = inner
        self.pres = pres
        self.posts = posts
        self.absents = absents
        self.receivers: dict[str, list[StreamPre]] = {}
        setup: list[tuple[str, StreamPre]] = []
        inner.setup(setup)
        for stream, pre in setup:
            self.receivers.setdefault(stream, []).append(pre)

    def start(self) -> None:
        """The query starts: seed the start states (the reference's ``init``)."""
        self.inner.init()

    def stabilize(self, stream: str, timestamp: int) -> None:
        """Before an event: expire by ``within``, then make handed-over matches pending
        (patterns: the states of this stream; sequences: all, after a reset)."""
        for pre in self.pres:
            pre.expire_events(timestamp)
        if self.sequence:
            self.inner.reset()
            self.inner.update()
            return
        states = self.receivers[stream]
        if len(states) == 1:
            states[0].update_state()
        else:
            for pre in states:
                pre.update_state()

    def pending_count(self) -> int:
        """How many partial matches the states hold (a measure of state size)."""
        return sum(pre.pending_count() for pre in self.pres)

    def get_state(self) -> dict[str, Any]:
        return {"pres": [pre.state for pre in self.pres],
                "returned": [post.returned for post in self.posts]}

    def set_state(self, state: dict[str, Any]) -> None:
        for pre, pre_state in zip(self.pres, state["pres"], strict=True):
            pre.state = pre_state
        for post, returned in zip(self.posts, state["returned"], strict=True):
            post.returned = returned


class MachineBuilder:
    """Builds a :class:`Machine` from a pattern query (``StateInputStreamParser.parse``)."""

    def __init__(self, info: QueryInfo, analyzed: AnalyzedApp, context: Context,
                 scheduler_index: SchedulerIndex, compiler: PatternExpressions) -> None:
        stream = info.query.input
        assert isinstance(stream, ast.StateInputStream)
        self.info = info
        self.pattern = stream
        self.context = context
        self.scheduler_index = scheduler_index
        self.sequence = stream.kind == "sequence"
        self.size = state_count(stream.state)
        self.references = compiler.references
        self.compiler = compiler
        self.next_state = 0
        self.posts: list[StreamPost] = []
        self.absents: list[tuple[Absent, Scheduler]] = []

    def build(self) -> Machine:
        processors: list[StreamPre] = []
        inner = self._parse(self.pattern.state, None, None, True, processors)
        if self.pattern.within is not None:
            start_ids = tuple(p.state_id for p in processors if p.start)
            for pre in processors:
                pre.start_ids = start_ids
                pre.within = self.pattern.within.millis
        inner.first.last = inner.last
        inner.connect_selector()
        return Machine(self.sequence, inner, processors, self.posts, self.absents)

    def _scheduler(self, pre: Absent) -> Scheduler:
        key = f"absent:{self.info.id}:{len(self.absents)}"
        scheduler = self.context.scheduler(self.scheduler_index(key), self.info.id)
        pre.scheduler = scheduler
        pre.context = self.context
        self.absents.append((pre, scheduler))
        return scheduler

    def _parse(self, element: ast.StateElement, pre: StreamPre | None, post: StreamPost | None,
               start: bool, processors: list[StreamPre]) -> Inner:
        if isinstance(element, (ast.StreamStateElement, ast.AbsentStreamStateElement)):
            return self._stream(element, pre, post, start, processors)
        if isinstance(element, ast.NextStateElement):
            current = self._parse(element.element, pre, post, start, processors)
            following = self._parse(element.next, pre, post, False, processors)
            current.last.set_next_pre(following.first)
            return NextInner(current, following)
        if isinstance(element, ast.EveryStateElement):
            inside: list[StreamPre] = []
            inner = self._parse(element.element, pre, post, start, inside)
            every = EveryInner(inner)
            every.last.set_next_every(every.first)
            for processor in inside:
                processor.within_every = every.first
            processors.extend(inside)
            return every
        if isinstance(element, ast.LogicalStateElement):
            return self._logical(element, start, processors)
        assert isinstance(element, ast.CountStateElement)
        max_count = MAX_COUNT if element.max_count is None else element.max_count
        count_pre = CountPre(self.sequence, self.size, element.min_count, max_count)
        count_post = CountPost(element.min_count, max_count)
        count_pre.count_post = count_post
        return self._parse(element.element, count_pre, count_post, start, processors)

    def _logical(self, element: ast.LogicalStateElement, start: bool,
                 processors: list[StreamPre]) -> Inner:
        either = element.op == "or"
        first, second = logical_sides(element)
        sides: list[tuple[LogicalPre, LogicalPost]] = []
        for side in (first, second):
            if isinstance(side, ast.AbsentStreamStateElement):
                waiting = side.waiting_time.millis if side.waiting_time is not None else None
                absent = AbsentLogicalPre(self.sequence, self.size, either, waiting)
                self._scheduler(absent)
                sides.append((absent, AbsentLogicalPost(either)))
            else:
                sides.append((LogicalPre(self.sequence, self.size, either), LogicalPost(either)))
        (pre1, post1), (pre2, post2) = sides
        post1.partner_pre, post2.partner_pre = pre2, pre1
        post1.partner_post, post2.partner_post = post2, post1
        pre1.partner, pre2.partner = pre2, pre1
        right = self._parse(second, pre2, post2, start, processors)
        left = self._parse(first, pre1, post1, start, processors)
        return LogicalInner(left, right)

    def _stream(self, element: ast.StreamStateElement | ast.AbsentStreamStateElement,
                pre: StreamPre | None, post: StreamPost | None, start: bool,
                processors: list[StreamPre]) -> Inner:
        state_id = self.next_state
        self.next_state += 1
        absent = isinstance(element, ast.AbsentStreamStateElement)
        if isinstance(element, ast.StreamStateElement):
            current = self.references.bind(element, state_id, isinstance(pre, CountPre))
        else:
            current = self.references.absent(element, state_id)
        filters = [h.expression for h in element.stream.handlers if isinstance(h, ast.Filter)]
        if pre is None:
            if isinstance(element, ast.AbsentStreamStateElement):
                assert element.waiting_time is not None
                absent_pre = AbsentStreamPre(self.sequence, self.size, element.waiting_time.millis)
                self._scheduler(absent_pre)
                pre = absent_pre
            else:
                pre = self._plain(filters, current)
        pre.state_id = state_id
        pre.start = start
        pre.condition = self._condition(filters, current)
        if post is None:
            post = AbsentStreamPost() if absent else StreamPost()
        post.state_id = state_id
        post.pre = pre
        pre.post = pre.last = post
        self.posts.append(post)
        processors.append(pre)
        stream = element.stream
        return Inner(pre, post, stream.key)

    def _plain(self, filters: list[ast.Expression], current: Current) -> StreamPre:
        """A plain state; a pattern's is indexed when its filter has usable equalities."""
        if not self.sequence and filters:
            keys = equality_keys(filters, current, self.references, self.compiler)
            if keys is not None:
                indexed = IndexedStreamPre(self.sequence, self.size, keys)
                indexed.residual = self._condition(keys.residual(filters), current)
                return indexed
        return StreamPre(self.sequence, self.size)

    def _condition(self, filters: list[ast.Expression], current: Current) -> Condition | None:
        if not filters:
            return None
        conditions = [self.compiler.filter(f, current) for f in filters]
        if len(conditions) == 1:
            return conditions[0]
        return lambda match: all(c(match) for c in conditions)
