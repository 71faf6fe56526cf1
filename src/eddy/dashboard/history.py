"""History from WSO2's ``METRIC_*`` tables (``WSO2_METRICS_DB``), so charts survive a
dashboard restart: an app's events in, out and errors as rates between two reports.

Rows are those a node writes (:mod:`eddy.store.metrics_tables`): ``SOURCE`` is the node's
``wso2.carbon.id``, counters are named ``org.wso2.siddhi.SiddhiApps.<app>.Siddhi.<figure>``.
"""

from __future__ import annotations

from sqlalchemy import Engine, select

from eddy.dashboard.series import Point
from eddy.store.metrics_tables import COUNTER

_COUNTERS = {"events_in_total": "eventsIn", "events_out_total": "eventsOut",
             "errors_total": "errors"}


def counter_name(app: str, figure: str) -> str:
    """The ``METRIC_COUNTER`` name of an app's total (``events_in_total`` …)."""
    return f"org.wso2.siddhi.SiddhiApps.{app}.Siddhi.{_COUNTERS[figure]}"


def rates(points: list[Point]) -> list[Point]:
    """Rates per second between successive totals (a total that went down restarts)."""
    return [(t, max(0.0, v - pv) * 1000 / (t - pt))
            for (pt, pv), (t, v) in zip(points, points[1:], strict=False) if t > pt]


class MetricHistory:
    """Reads a node's app counters back from ``METRIC_COUNTER``."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def app_rates(self, source: str, app: str, since_ms: int) -> dict[str, list[Point]]:
        """``{events_in_total_rate: [...], …}`` since ``since_ms``."""
        found: dict[str, list[Point]] = {}
        with self.engine.connect() as connection:
            for figure in _COUNTERS:
                rows = connection.execute(
                    select(COUNTER.c.TIMESTAMP, COUNTER.c.COUNT)
                    .where(COUNTER.c.SOURCE == source,
                           COUNTER.c.NAME == counter_name(app, figure),
                           COUNTER.c.TIMESTAMP >= since_ms)
                    .order_by(COUNTER.c.TIMESTAMP)).all()
                found[f"{figure}_rate"] = rates([(int(t), float(c)) for t, c in rows])
        return found
