"""Choosing a worker for each child app of one parent: all of them, or none.

Receiver children (groups that hold a user source such as HTTP) go to receiver workers
(``isReceiverNode: true``), every other child to resource workers. A child goes to the
worker with the fewest children so far (ties: node id order), and instances of one
execution group go to different workers while there are enough, so that losing a worker
costs a group one instance. Receiver instances of one group must be on different workers:
each opens the same source port.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from eddy.store.manager_state import ChildRow, WorkerRow


@dataclass(frozen=True)
class Waiting:
    """Why the children cannot be placed now."""

    reason: str


def resource_shortage(workers: Iterable[WorkerRow], min_resource_count: int) -> str | None:
    """The reason nothing is deployed while fewer than ``minResourceCount`` resource workers
    are up; None when there are enough."""
    up = sum(1 for w in workers if not w.receiver)
    if up >= min_resource_count:
        return None
    return (f"waiting for resource workers: minResourceCount is {min_resource_count} and "
            f"{up} {'is' if up == 1 else 'are'} up")


def assign(children: Iterable[ChildRow], workers: Mapping[str, WorkerRow],
           load: Mapping[str, int], min_resource_count: int,
           siblings: Iterable[ChildRow] = ()) -> dict[str, str] | Waiting:
    """``{child: worker id}`` for every child, or why that cannot be done now. ``load``
    counts the children each worker already has; ``siblings`` are the parent's children
    that stay where they are (their groups' instances are spread around them)."""
    shortage = resource_shortage(workers.values(), min_resource_count)
    if shortage is not None:
        return Waiting(shortage)
    counts = Counter({node: load.get(node, 0) for node in workers})
    used: dict[str, set[str]] = {}
    for sibling in siblings:
        if sibling.node_id is not None:
            used.setdefault(sibling.group, set()).add(sibling.node_id)
    result: dict[str, str] = {}
    for child in sorted(children, key=lambda c: (not c.receiver, c.group, c.instance)):
        pool = sorted(n for n, w in workers.items() if w.receiver == child.receiver)
        if not pool:
            kind = "receiver" if child.receiver else "resource"
            return Waiting(f"{child.name} needs a {kind} worker "
                           f"(isReceiverNode: {str(child.receiver).lower()}); none is up")
        taken = used.setdefault(child.group, set())
        fresh = [n for n in pool if n not in taken]
        if child.receiver and not fresh:
            return Waiting(f"{child.name}: every instance of {child.group} opens the same "
                           f"source, so each needs its own receiver worker; "
                           f"{len(pool)} {'is' if len(pool) == 1 else 'are'} up")
        node = min(fresh or pool, key=lambda n: (counts[n], n))
        result[child.name] = node
        counts[node] += 1
        taken.add(node)
    return result
