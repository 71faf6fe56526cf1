"""The Python stateful operators a group's query runs in ``applyInPandasWithState``: the
per-event runtime's host, the vectorised ones (window aggregates, followed-by patterns,
window joins, aggregations) with what they share, and their state keys."""
