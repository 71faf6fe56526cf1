"""What every window processor shares: its interface, its parameters, its state handling.

A window takes a chunk (a list of ``(kind, ts, data)`` events: current events from the
stream, or a timer from its scheduler) and returns the chunks it sends on, in order, each
of which the selector will treat as one chunk. Windows follow the reference's
``*WindowProcessor`` classes closely: which events go out in which order and with which
timestamp is exactly what the conformance cases check.

State lives in ``self.state`` (plain data: tuples, lists, deques, ints) so that the group
runtime can snapshot it; the compiled parameter getters stay on the processor.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, ClassVar

from eddy.lang import ast
from eddy.lang.ast import AttrType
from eddy.lang.typecheck import constant_value
from eddy.runtime.context import Context, Scheduler
from eddy.runtime.events import Event

Chunk = list[Event]
Getter = Callable[[Event], Any]


class WindowArgs:
    """A window's parameters: constants by value, attributes by their position in the data."""

    def __init__(self, window: ast.Window, type_of: Callable[[ast.Expression], AttrType],
                 index_of: Callable[[ast.Variable], int],
                 compile_expr: Callable[[ast.Expression], Getter],
                 attribute_types: Sequence[AttrType] = ()) -> None:
        self.window = window
        self.args = window.args
        self.attribute_types = list(attribute_types)  # of the events reaching the window
        self._type_of = type_of
        self._index_of = index_of
        self._compile = compile_expr

    def __len__(self) -> int:
        return len(self.args)

    def constant(self, i: int) -> Any:
        return constant_value(self.args[i])

    def is_constant(self, i: int) -> bool:
        return constant_value(self.args[i]) is not None

    def type(self, i: int) -> AttrType:
        return self._type_of(self.args[i])

    def index(self, i: int) -> int:
        """The data position of attribute parameter ``i``."""
        arg = self.args[i]
        if not isinstance(arg, ast.Variable):
            raise ValueError(f"#window.{self.window.name}() needs an attribute as argument "
                             f"{i + 1}")
        return self._index_of(arg)

    def getter(self, i: int) -> Getter:
        """A closure reading parameter ``i`` from an event (attribute or expression)."""
        return self._compile(self.args[i])


class Window:
    """Base of the window processors.

    ``mode`` is the reference's ``ProcessingMode`` (``SLIDE`` windows make ``min``/``max``
    keep a deque); ``scheduling`` windows get a :class:`Scheduler` whose timers come back
    through :meth:`process` as timer events.
    """

    mode: str = "SLIDE"
    scheduling: ClassVar[bool] = False

    def __init__(self, context: Context, args: WindowArgs, expects_expired: bool,
                 find: bool = False) -> None:
        self.context = context
        self.args = args
        self.expects_expired = expects_expired
        self.find = find
        self.scheduler: Scheduler | None = None
        self.configure(args)
        self.state: Any = self.fresh_state()

    def configure(self, args: WindowArgs) -> None:
        """Reads the parameters (constants are fixed when the app is built)."""

    def fresh_state(self) -> Any:
        raise NotImplementedError

    def get_state(self) -> Any:
        return self.state

    def set_state(self, state: Any) -> None:
        self.state = state

    def process(self, chunk: Chunk) -> list[Chunk]:
        raise NotImplementedError

    def notify_at(self, time: int) -> None:
        assert self.scheduler is not None, f"{type(self).__name__} has no scheduler"
        self.scheduler.notify_at(time)

    @property
    def processing_mode(self) -> str:
        return self.mode


class Slots:
    """Base of window state records: attribute slots that pickle as plain data."""

    __slots__: tuple[str, ...] = ()

    def __repr__(self) -> str:
        fields = ", ".join(f"{s}={getattr(self, s)!r}" for s in self.__slots__)
        return f"{type(self).__name__}({fields})"


def time_param(args: WindowArgs, i: int, window: str) -> int:
    value = args.constant(i)
    if not isinstance(value, int) or isinstance(value, bool):
        raise ValueError(f"#window.{window}() needs a constant time as argument {i + 1}")
    return value
