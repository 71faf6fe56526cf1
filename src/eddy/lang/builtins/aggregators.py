"""Siddhi's core aggregators (``io.siddhi.core.query.selector.attribute.aggregator``).

Parameter types follow each aggregator's ``@Extension`` overloads; result types follow its
``init``/``getReturnType``: ``sum`` widens to LONG or DOUBLE, ``min``/``max`` and their
``Forever`` forms keep the input type, ``avg`` and ``stdDev`` are DOUBLE, the counts LONG.
"""

from __future__ import annotations

from eddy.lang.ast import AttrType
from eddy.lang.functions import (
    ANY,
    NUMERIC,
    FunctionSpec,
    Param,
    fixed,
    same_as,
    sig,
    typeset,
    widened,
)

_BOOL = typeset(AttrType.BOOL)
_ARG = Param("arg", NUMERIC)


SPECS: tuple[FunctionSpec, ...] = (
    FunctionSpec(None, "sum", "aggregate", (sig(_ARG),), widened(AttrType.LONG, AttrType.DOUBLE),
                 "Sum of the values: LONG for INT/LONG input, DOUBLE for FLOAT/DOUBLE; null "
                 "when there are none."),
    FunctionSpec(None, "avg", "aggregate", (sig(_ARG),), fixed(AttrType.DOUBLE),
                 "Mean of the values, as a DOUBLE; null when there are none."),
    FunctionSpec(None, "count", "aggregate", (sig(), sig(Param("arg", ANY))),
                 fixed(AttrType.LONG),
                 "Number of events (the argument, if any, is ignored); 0 when there are none."),
    FunctionSpec(None, "distinctCount", "aggregate",
                 (sig(Param("arg", NUMERIC | {AttrType.STRING})),), fixed(AttrType.LONG),
                 "Number of distinct values of the argument, as a LONG."),
    FunctionSpec(None, "min", "aggregate", (sig(_ARG),), same_as(0),
                 "Smallest value, in the input's type; null when there are none."),
    FunctionSpec(None, "max", "aggregate", (sig(_ARG),), same_as(0),
                 "Largest value, in the input's type; null when there are none."),
    FunctionSpec(None, "minForever", "aggregate", (sig(_ARG),), same_as(0),
                 "Smallest value ever seen, ignoring window expiry, in the input's type."),
    FunctionSpec(None, "maxForever", "aggregate", (sig(_ARG),), same_as(0),
                 "Largest value ever seen, ignoring window expiry, in the input's type."),
    FunctionSpec(None, "stdDev", "aggregate", (sig(_ARG),), fixed(AttrType.DOUBLE),
                 "Population standard deviation of the values, as a DOUBLE."),
    FunctionSpec(None, "and", "aggregate", (sig(Param("arg", _BOOL)),), fixed(AttrType.BOOL),
                 "True when every value is true."),
    FunctionSpec(None, "or", "aggregate", (sig(Param("arg", _BOOL)),), fixed(AttrType.BOOL),
                 "True when any value is true."),
    FunctionSpec(None, "unionSet", "aggregate",
                 (sig(Param("set", typeset(AttrType.OBJECT))),), fixed(AttrType.OBJECT),
                 "Union of the sets (made with createSet()), as an OBJECT."),
)
