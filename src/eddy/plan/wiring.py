"""Graph helpers for wiring execution groups: partition assignment and cycle detection."""

from __future__ import annotations

from collections.abc import Mapping


def assign_partitions(partitions: int, instances: int) -> tuple[tuple[int, ...], ...]:
    """Which topic partitions each of ``instances`` consumers reads.

    As WSO2 SP: with as many instances as partitions each reads its own; otherwise each reads
    ``partitions // instances`` consecutive ones and the last also takes the remainder.
    """
    if instances >= partitions:
        return tuple((i,) if i < partitions else () for i in range(instances))
    step = partitions // instances
    assigned = [tuple(range(i * step, (i + 1) * step)) for i in range(instances)]
    assigned[-1] = tuple(range((instances - 1) * step, partitions))
    return tuple(assigned)


def find_cycle(topics: Mapping[str, tuple[tuple[str, ...], tuple[str, ...]]]) -> list[str]:
    """A cycle among groups linked producer → consumer by topics, as group names; [] if none."""
    edges: dict[str, set[str]] = {}
    for producers, consumers in topics.values():
        for producer in producers:
            edges.setdefault(producer, set()).update(c for c in consumers if c != producer)
    state: dict[str, int] = {}
    path: list[str] = []

    def visit(node: str) -> list[str]:
        state[node] = 1
        path.append(node)
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        state[node] = 2
        path.pop()
        return []

    for start in sorted(edges):
        if start not in state:
            found = visit(start)
            if found:
                return found
    return []
