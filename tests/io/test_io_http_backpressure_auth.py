"""Two things an HTTP source takes from the process that runs it, over real HTTP:

* how far the app's query lags behind the source's topic — past the bound, requests are
  refused with 503 and ``Retry-After`` until the query's consumer position catches up;
* the worker's users — a source with ``basic.auth.enabled='true'`` under ``eddy worker``
  accepts exactly the credentials of ``auth.configs``.

No Spark: the tests play the query by committing its consumer position on the bus.
"""

from __future__ import annotations

import time
from pathlib import Path

import httpx

from eddy.bus import open_bus, sqlite_url
from eddy.config import parse_config
from eddy.io import IoConfig
from eddy.io.app_connectors import AppConnectors, query_consumer
from eddy.io.sources.http_source import HttpSource
from eddy.lang import check
from eddy.node.runner import AppSpec
from eddy.node.worker import Worker

APP = """
@app:name('Lagging')
@source(type='http', receiver.url='http://127.0.0.1:0/in', @map(type='json'))
define stream In (id long, temp double);
"""
AUTH_APP = """
@app:name('Guarded')
@source(type='http', receiver.url='http://127.0.0.1:0/in', basic.auth.enabled='true',
        @map(type='json'))
define stream In (id long, temp double);
"""
DEPLOYMENT = """
auth.configs:
  type: local
  userManager:
    adminRole: admin
    userStore:
      users:
       - user: {username: admin, password: c2VjcmV0, roles: 1}
       - user: {username: feeder, password: ZmVlZA==, roles: 2}
      roles:
       - role: {id: 1, displayName: admin}
       - role: {id: 2, displayName: sender}
eddy:
  dataDir: data
  sourceMaxBehindS: 7
"""


def _url(connectors: AppConnectors) -> str:
    (source,) = connectors.sources
    assert isinstance(source, HttpSource)
    return source.url


def test_a_lagging_app_gets_503_with_retry_after_until_it_catches_up(
        tmp_path: Path, io_config: IoConfig) -> None:
    analyzed = check(APP)
    io_config.max_behind_s = 1.0
    bus = open_bus(sqlite_url(tmp_path / "bus.db"))
    consumer = query_consumer(analyzed.name)
    try:
        with AppConnectors(analyzed, bus, io_config, lag_consumer=consumer) as connectors:
            url = _url(connectors)
            first = httpx.post(url, json=[{"id": 1, "temp": 20.5}, {"id": 2, "temp": 30.0}])
            assert (first.status_code, first.json()) == (200, {"events": 2})
            time.sleep(2.6)  # the query has not read them: 2.6 s behind, past the bound
            refused = httpx.post(url, json={"id": 3, "temp": 1.0})
            assert refused.status_code == 503, refused.text
            assert int(refused.headers["Retry-After"]) >= 2  # ceil(≥ 2.6 − 1.0)
            assert "behind" in refused.json()["error"]
            assert bus.end_offsets("Lagging.In") == [2]  # nothing of it was stored
            bus.commit(consumer, "Lagging.In", 0, 2)  # the query processed both events
            time.sleep(0.3)  # past the lag's reuse time
            again = httpx.post(url, json={"id": 3, "temp": 1.0})
            assert (again.status_code, again.json()) == (200, {"events": 1})
            assert bus.end_offsets("Lagging.In") == [3]
    finally:
        bus.close()


def test_worker_sources_with_basic_auth_take_the_workers_users(tmp_path: Path) -> None:
    config_path = tmp_path / "deployment.yaml"
    config_path.write_text(DEPLOYMENT)
    worker = Worker(parse_config(DEPLOYMENT, config_path), start_spark=False)
    factory = worker.registry._io_factory
    assert factory is not None
    spec = AppSpec("Guarded", AUTH_APP, tmp_path / "checkpoint",
                   sqlite_url(tmp_path / "bus.db"))
    connectors = factory(spec, check(AUTH_APP))
    assert isinstance(connectors, AppConnectors)
    assert connectors.config.max_behind_s == 7
    connectors.start()
    try:
        url, event = _url(connectors), {"id": 1, "temp": 20.5}
        assert httpx.post(url, json=event).status_code == 401
        assert httpx.post(url, json=event, auth=("feeder", "wrong")).status_code == 401
        assert httpx.post(url, json=event, auth=("nobody", "feed")).status_code == 401
        for user, password in (("feeder", "feed"), ("admin", "secret")):
            answer = httpx.post(url, json=event, auth=(user, password))
            assert (answer.status_code, answer.json()) == (200, {"events": 1})
    finally:
        connectors.stop()
