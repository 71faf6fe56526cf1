"""Siddhi's core windows (``io.siddhi.core.query.processor.stream.window``).

Parameters Siddhi marks non-``dynamic`` must be constants; a time value such as ``1 sec`` is a
LONG constant, a bare ``1000`` an INT. Where a window's ``init`` insists on a stream attribute
(``externalTime``'s timestamp, ``session``'s key, the attributes of ``frequent``) the
parameter is ``attribute=True``. None of the core windows adds attributes to the stream.
"""

from __future__ import annotations

from collections.abc import Sequence

from eddy.lang.ast import AttrType
from eddy.lang.functions import (
    NUMERIC,
    FunctionSpec,
    Param,
    Signature,
    TypeMismatch,
    Validator,
    overloads,
    sig,
    typeset,
)

_INT = typeset(AttrType.INT)
_LONG = typeset(AttrType.LONG)
_TIME = typeset(AttrType.INT, AttrType.LONG)  # Siddhi's <INT|LONG|TIME>; a time value is LONG
_DOUBLE = typeset(AttrType.DOUBLE)
_STRING = typeset(AttrType.STRING)
_BOOL = typeset(AttrType.BOOL)
_SORTABLE = NUMERIC | _STRING

_CURRENT = Param("stream.current.event", _BOOL, optional=True, constant=True)


def _window(name: str, signatures: Sequence[Signature], description: str,
            validate: Validator | None = None) -> FunctionSpec:
    return FunctionSpec(None, name, "window", tuple(signatures), None, description,
                        validate=validate)


def _check_sort(types: Sequence[AttrType], constants: Sequence[object | None]) -> None:
    """After the length: attributes, each optionally followed by 'asc' or 'desc'.

    Siddhi's overloads also insist that, when more than one argument follows the length, the
    third is a STRING: to sort by several attributes the first needs an explicit order.
    """
    if len(types) >= 3 and types[2] != AttrType.STRING:
        raise TypeMismatch("#window.sort() needs 'asc' or 'desc' after the first attribute "
                           "when sorting by more than one", arg_index=2)
    i = 1
    while i < len(types):
        if constants[i] is not None:
            raise TypeMismatch(f"#window.sort() needs an attribute to sort by as argument "
                               f"{i + 1}, not the constant {constants[i]!r}; 'asc' or 'desc' "
                               "may only follow an attribute", arg_index=i)
        if i + 1 < len(types) and types[i + 1] == AttrType.STRING:
            order = constants[i + 1]
            if not (isinstance(order, str) and order.lower() in ("asc", "desc")):
                shown = "a STRING attribute" if order is None else repr(order)
                raise TypeMismatch(f"#window.sort() reads argument {i + 2} as the order of "
                                   f"argument {i + 1}, so it must be 'asc' or 'desc', not "
                                   f"{shown}", arg_index=i + 1)
            i += 2
        else:
            i += 1


def _check_external_start(types: Sequence[AttrType], constants: Sequence[object | None]) -> None:
    if len(types) > 2 and constants[2] is None and types[2] != AttrType.LONG:
        raise TypeMismatch("#window.externalTimeBatch() needs 'start.time' (argument 3) to be a "
                           f"constant INT or LONG, or a LONG attribute, not {types[2].value}",
                           arg_index=2)


def _check_batch_length(types: Sequence[AttrType], constants: Sequence[object | None]) -> None:
    """``BatchWindowProcessor.init``: a chunk length of zero means no limit; below zero is a
    fault."""
    if constants and isinstance(constants[0], int) and constants[0] < 0:
        raise TypeMismatch(f"#window.batch() takes a 'window.length' of zero or more, not "
                           f"{constants[0]}", arg_index=0)


_LENGTH = Param("window.length", _INT, constant=True)
_WINDOW_TIME = Param("window.time", _TIME, constant=True)
_TIMESTAMP = Param("timestamp", _LONG, attribute=True)

WINDOWS: tuple[FunctionSpec, ...] = (
    _window("length", [sig(_LENGTH)], "Sliding window of the last N events."),
    _window("lengthBatch", [sig(_LENGTH, _CURRENT)],
            "Tumbling window emitting every N events (optionally streaming each current "
            "event as it arrives)."),
    _window("time", [sig(_WINDOW_TIME)], "Sliding window of the events of the last period."),
    _window("timeBatch",
            [sig(_WINDOW_TIME, Param("start.time", _TIME, optional=True, constant=True),
                 _CURRENT)],
            "Tumbling window emitting once per period, optionally aligned to a start time."),
    _window("timeLength", [sig(_WINDOW_TIME, _LENGTH)],
            "Sliding window of the last N events that are also within the last period."),
    _window("externalTime", [sig(_TIMESTAMP, _WINDOW_TIME)],
            "Sliding time window driven by a LONG timestamp attribute of the events."),
    _window("externalTimeBatch",
            overloads([_TIMESTAMP, _WINDOW_TIME],
                      Param("start.time", _TIME),
                      Param("timeout", _TIME, constant=True),
                      Param("replace.with.batchtime", _BOOL, constant=True)),
            "Tumbling time window driven by a LONG timestamp attribute, with an optional "
            "start time, flush timeout and batch-end timestamps.", _check_external_start),
    _window("session",
            overloads([Param("session.gap", _TIME, constant=True)],
                      Param("session.key", _STRING, attribute=True),
                      Param("allowed.latency", _TIME, constant=True)),
            "Groups events into sessions that close after a gap of inactivity, per key."),
    _window("sort",
            [sig(_LENGTH, Param("attribute", _SORTABLE),
                 Param("attribute.or.order", _SORTABLE, optional=True, variadic=True))],
            "Keeps the N events that sort first by the given attributes, each optionally "
            "followed by 'asc' or 'desc', expiring the one that sorts last.", _check_sort),
    _window("delay", [sig(Param("window.delay", _TIME, constant=True))],
            "Emits each event after a fixed delay."),
    _window("batch", [sig(Param("window.length", _INT, optional=True, constant=True))],
            "Tumbling window over each arriving chunk of events (at most N per batch).",
            _check_batch_length),
    _window("frequent",
            [sig(Param("event.count", _INT, constant=True),
                 Param("attribute", _STRING, optional=True, attribute=True))],
            "Keeps events whose key is among the N most frequent (deprecated in Siddhi)."),
    _window("lossyFrequent",
            overloads([Param("support.threshold", _DOUBLE, constant=True)],
                      Param("error.bound", _DOUBLE, constant=True),
                      Param("attribute", _STRING, attribute=True)),
            "Keeps events whose key occurs above a support threshold, by Lossy Counting "
            "(deprecated in Siddhi)."),
    _window("expression", [sig(Param("expression", _STRING))],
            "Sliding window holding events while a condition over them holds, e.g. "
            "'count() <= 20'."),
    _window("expressionBatch",
            overloads([Param("expression", _STRING | _BOOL)],
                      Param("include.triggering.event", _BOOL),
                      Param("stream.current.event", _BOOL, constant=True)),
            "Tumbling window emitting when a condition over the batch stops holding."),
    _window("cron", [sig(Param("cron.expression", _STRING, constant=True))],
            "Tumbling window emitting on a cron schedule."),
)


SPECS: tuple[FunctionSpec, ...] = WINDOWS
"""Every spec of this module, in registration order."""
