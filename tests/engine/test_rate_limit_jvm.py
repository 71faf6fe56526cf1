"""Output rate limits in eddy's Java window aggregate (the operator's ``RateLimit``)
against the per-event runtime.

The random events of :mod:`test_window_aggregate_jvm` (timestamps that tie and go back,
rows of other streams that only move the clock) through ``eddy.replay`` at micro-batches
of 40 and all (the held events written and read back between batches), for
``output all|first|last every N events`` and ``every <time>``, with and without
``group by`` (``first every 1 event``: only the very first event ever), over ``time``,
``length``, ``externalTime``, ``sort``, batch windows and none, in value partitions (each
value its own limit), into current or all
events (the window's timer and the limit's own timer due at one row), with a ``having``
and ``order by``/``limit``;
the events start 100 ms apart, so that a limit's first period ends between two of them;
a window's timer and a limit's due at one row emit into one stream in the runtime's order.
The outputs must equal the runtime's, event for event and in order.
"""

from __future__ import annotations

from typing import Any

import pytest
from test_window_aggregate_jvm import SCHEMAS, STREAMS, _events, combined, equals_the_runtime

from eddy.engine.compile.operator_facts import physical_plan
from eddy.engine.spark.jvm_classes import bridge_jar
from eddy.engine.spark.row_layout import input_layout
from eddy.lang import check

pytestmark = pytest.mark.skipif(bridge_jar() is None, reason="needs a JDK to build eddy's "
                                "Java operators")

APPS = {
    "all-events-by-room": """@info(name='q')
from T#window.length(3)
select room, count() as n
group by room
output every 4 events
insert into O;""",
    "first-events-global-all": """@info(name='q')
from T[temp > 16.0]#window.time(600 milliseconds)
select avg(temp) as a, count() as n
output first every 3 events
insert all events into O;""",
    "first-events-by-room-having": """@info(name='q')
from T
select room, sum(room) as s
group by room
having s > 2
output first every 2 events
insert into O;""",
    "first-every-one": """@info(name='q')
from T#window.length(2)
select site, temp
output first every 1 events
insert into O;""",
    "last-events-global": """@info(name='q')
from T#window.length(5)
select avg(temp) as mean, dev
output last every 3 events
insert into O;""",
    "last-events-by-site-all": """@info(name='q')
from T#window.time(500 milliseconds)
select site, max(temp) as hi
group by site
output last every 2 events
insert all events into O;""",
    "all-time-by-room-all": """@info(name='q')
from T#window.time(700 milliseconds)
select room, count() as n
group by room
output every 900 milliseconds
insert all events into O;""",
    "last-time-by-room-external": """@info(name='q')
from T#window.externalTime(dev, 5)
select room, sum(temp) as s
group by room
output last every 500 milliseconds
insert into O;""",
    "last-time-global": """@info(name='q')
from T[ok == true]#window.length(4)
select min(temp) as lo
output last every 1 sec
insert into O;""",
    "first-time-global-sort": """@info(name='q')
from T#window.sort(3, room, 'desc', dev)
select dev, temp
output first every 400 milliseconds
insert all events into O;""",
    "first-time-by-room-batches": """@info(name='q')
from T#window.lengthBatch(3)
select room, avg(temp) as a
group by room
output first every 300 milliseconds
insert into O;""",
    "last-events-time-batches": """@info(name='q')
from T#window.timeBatch(400 milliseconds)
select site, count() as n
group by site
output last every 2 events
insert all events into O;""",
    "timers-into-one-stream": """@info(name='q')
from T#window.time(300 milliseconds)
select room, count() as n
group by room
insert expired events into Shared;
@info(name='p')
from T#window.length(2)
select room, count() as n
group by room
output every 600 milliseconds
insert into Shared;""",
    "ordered-last-events-expired": """@info(name='q')
from T#window.time(400 milliseconds)
select room, site, count() as n
group by room, site
order by n desc, room
limit 2
output last every 3 events
insert expired events into O;""",
    "partitioned-last-events": """partition with (room of T)
begin
@info(name='q')
from T#window.length(3)
select room, site, avg(temp) as a
group by site
output last every 2 events
insert into O;
@info(name='p')
from T[temp > 16.0]
select room, dev
output first every 3 events
insert into P;
end;""",
    "all-time-plain": """@info(name='q')
from T[room != 2]
select dev, site
output all every 1 sec
insert into O;""",
}


def test_rate_limits_equal_the_runtime(spark: object) -> None:
    app = STREAMS + combined(APPS)
    analyzed = check(app)
    plan = physical_plan(analyzed, input_layout(analyzed), clock=False)
    operators = {c.query: c.operator for c in plan.queries}
    assert set(operators.values()) == {"jvm-window-aggregate"}, operators
    equals_the_runtime(app, _lead() + _events(3, 160), SCHEMAS)


def _lead() -> list[dict[str, Any]]:
    """Events 100 ms apart before the random ones, so that the limits' first periods (from
    the first event) hold several events and end between two of them."""
    return [{"stream": "T", "timestamp": 300 + 100 * i,
             "data": [i, 1 + i % 3, "ab"[i % 2], 18.0 + i, i % 4 != 0]} for i in range(12)]
