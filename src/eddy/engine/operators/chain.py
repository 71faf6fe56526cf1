"""A chain of eddy's Java operators in one streaming query: a consumer reading what its
producer inserts, in the same micro-batch (the planner's
:meth:`~eddy.plan.physical.planner.Planning.producer_of` says when that is exact).

Spark shares no part of a plan between two branches, so the group's outputs cannot read the
producer's operator beside a consumer reading it too: the producer would run twice, each copy
keeping its own state. The chain is one line instead. Each link reads the rows of the link
before it — the producer's outputs, then each consumer's outputs with the rows it carried —
and carries every one of them on in :data:`~eddy.engine.operators.operator_part.CARRY` (a
struct of the writer's columns), besides reading the producer's outputs as its input events;
its Java step hands the carried rows on as outputs (``Carrying.java``), and the writer takes
each row from the part that is set (:func:`~eddy.engine.operators.operator_part.writer_frame`).
The last link's rows are the whole chain's outputs.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import StructField

from eddy.engine.operators.operator_part import CARRY, order_prefix
from eddy.engine.spark.row_layout import QUERY, SEQ, STREAM, TS, InputLayout, value_slots
from eddy.lang.semantic import AnalyzedApp, QueryInfo


def link_rows(analyzed: AnalyzedApp, producer: QueryInfo, upstream: DataFrame,
              entry: tuple[int, ...]) -> tuple[DataFrame, InputLayout, tuple[int, ...]]:
    """What a consumer chained to ``producer`` reads from ``upstream`` (the writer's rows of
    the chain so far): each of them carried, and each output of the producer (at most one
    current event per input row) also as an event of the stream it fills, with its input
    row's ``_seq`` and its own time, in a layout of that stream alone (a carried row only
    has no ``_seq``); and the path at which such an event reaches a subscriber (the
    producer's emission, then ``1``; ``entry``: where an input's event reaches the
    producer)."""
    stream = producer.output_stream
    assert stream is not None
    read = InputLayout(((stream, analyzed.read_stream(stream, producer.partition).attributes),))
    slots = value_slots(list(producer.outputs))
    assert slots is not None, f"{producer.id}: a chain carries no object attribute (planner)"
    live = F.col(QUERY) == producer.id
    rows = upstream.select(
        F.when(live, F.col(SEQ)).alias(SEQ), TS, F.lit(stream).alias(STREAM),
        *(F.when(live, F.col(slot)).alias(column)
          for slot, column in zip(slots, read.columns(stream))),
        F.struct(*upstream.columns).alias(CARRY))
    return rows, read, link_entry(analyzed, producer, entry)


def link_entry(analyzed: AnalyzedApp, producer: QueryInfo, entry: tuple[int, ...]
               ) -> tuple[int, ...]:
    """The path at which ``producer``'s event reaches a query chained to it: the producer's
    emission (``entry``: where an input's event reaches the producer), then ``1``, as the
    runtime's junction hands an emission to its subscribers."""
    return (*order_prefix(producer, analyzed.place(producer), entry)[:-1], 1)


def carried(source: DataFrame) -> list[str]:
    """The carry column of a chained operator's rows, to keep last in its input (none
    when ``source`` is the group's input)."""
    return [CARRY] if CARRY in source.columns else []


def or_carried(keep: Column, source: DataFrame) -> Column:
    """``keep``, a filter of an operator's rows, letting a link's carried rows through too:
    a link hands on every row it carries."""
    return keep | F.col(CARRY).isNotNull() if CARRY in source.columns else keep


def carried_output(source: DataFrame) -> list[StructField]:
    """The carry column of a chained operator's outputs, last (null in its own outputs)."""
    return [StructField(CARRY, source.schema[CARRY].dataType, True)] \
        if CARRY in source.columns else []
