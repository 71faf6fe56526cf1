"""Rule 10 — JVM Spark SQL for the stateless queries that read a stateful operator's output.

Applies to each query left after rules 1–9 that is a *tail* of a query placed on an operator
other than the runtime (:meth:`~eddy.plan.physical.planner.Planning.tails`: it only filters
and projects the stream that query alone fills, in expressions Spark SQL evaluates, and only
tails read its own output), and to the tails of those in turn.

Exact because such a query keeps no state and its events are its producer's outputs, each
as it is emitted (all of them current, as the reference's junction hands them on): Spark SQL
computes its outputs from the rows of the producer's operator, and gives each the order path
the runtime gives a subscriber's emission (the producer's emission, then ``1``, the query's
place, ``0, 0`` and the event's position), so they merge into the reference order. A chain
``stateful query -> filter`` no longer sends both into the runtime. Inside a partition the
producer may insert into an inner stream ``#X`` its filters read (WSO2's partition idiom):
``#X`` stays with the key that filled it, so the filter sees each event once, at its place
in the partition; ``#X``'s own events are no output of the app and are dropped after.
"""

from __future__ import annotations

from eddy.plan.physical.heads import fills
from eddy.plan.physical.model import STATELESS, QueryChoice
from eddy.plan.physical.planner import Planning

NAME = "tail"
KEEPERS = ("runtime", "aggregation-step")
"""Operators whose outputs a tail cannot read (the runtime runs its chains itself)."""


def apply(planning: Planning) -> None:
    """Places every tail of a query placed outside the runtime (tails of tails included)."""
    for info in planning.analyzed.queries:
        choice = planning.chosen.get(info.id)
        if choice is None or choice.operator in KEEPERS or choice.operator == "spark-sql":
            continue
        for tail in planning.tails(info) or ():
            if tail.id in planning.chosen:
                continue
            producer = next(q for q in planning.analyzed.queries
                            if fills(q, tail.inputs[0], tail))
            planning.choose(QueryChoice(
                tail.id, "spark-sql-tail", STATELESS, NAME,
                f"it only filters and projects the outputs of {producer.id}, in Spark SQL "
                "after its operator"))
