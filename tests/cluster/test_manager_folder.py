"""The manager's deployment folder with two real ``eddy manager`` processes on PostgreSQL
(each with its own folder, no workers: what is checked is what the managers store):

* a parent app dropped into the follower's folder is left alone; dropped into the leader's,
  it is stored and split as through ``POST /siddhi-apps`` (it waits for workers);
* a faulty file is not deployed and its status says where, ``<file>:line:col``;
* deleting the file undeploys the app;
* the leader dies: the other manager leads and applies the file of its own folder.
"""

from __future__ import annotations

from pathlib import Path

from cluster_nodes import ClusterNode, manager, unique

from polling import wait_for

APP = """\
@App:name('{name}')

define stream TempStream (deviceID long, roomNo int, temp double);

@info(name = 'query-1')
@dist(execGroup='group-1')
from TempStream[temp > 40.0]
select roomNo, temp
insert into HotStream;
"""

BROKEN = """\
@App:name('{name}')

define stream TempStream (deviceID long, roomNo int, temp double);

from TempStream[temp > ]
select roomNo
insert into HotStream;
"""


def _folder(node: ClusterNode) -> Path:
    folder = node.home / "data" / "deployment" / "siddhi-files"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _leader(managers: list[ClusterNode]) -> ClusterNode | None:
    found = [m for m in managers if m.alive()
             and (r := m.get("/managers/isActive")) is not None and r.status_code == 200]
    return found[0] if len(found) == 1 else None


def test_parent_apps_dropped_into_the_leaders_folder(tmp_path: Path) -> None:
    group = unique("mgr")
    managers = [manager(tmp_path, f"m{i}", "postgresql", group) for i in (1, 2)]
    try:
        for node in managers:
            node.start()
        leader = wait_for(lambda: _leader(managers), 60, "a leading manager")
        follower = next(m for m in managers if m is not leader)

        ignored = unique("FollowerApp")
        (_folder(follower) / f"{ignored}.siddhi").write_text(APP.format(name=ignored))
        app = unique("FolderApp")
        (_folder(leader) / f"{app}.siddhi").write_text(APP.format(name=app))
        wait_for(lambda: app in (follower.json("/siddhi-apps") or []), 30,
                 "the leader to deploy the dropped app")
        assert ignored not in leader.json("/siddhi-apps")  # only the leader acts
        assert leader.json(f"/siddhi-apps/{app}") == {"content": APP.format(name=app)}
        assert [c["childAppName"] for c in leader.json(f"/managers/siddhi-apps/{app}")] == \
            [f"{app}-group-1-1"]
        assert leader.json(f"/siddhi-apps/{app}/status")["status"] == "inactive"  # no worker

        broken = unique("BrokenApp")
        (_folder(leader) / f"{broken}.siddhi").write_text(BROKEN.format(name=broken))
        status = wait_for(lambda: (s := leader.json(f"/siddhi-apps/{broken}/status")) and s,
                          30, "the faulty file to be reported")
        assert status["status"] == "faulty"
        assert f"{broken}.siddhi:5:" in status["message"], status["message"]
        assert broken not in leader.json("/siddhi-apps")
        assert f"{broken}.siddhi:5:" in leader.log.read_text()

        (_folder(leader) / f"{app}.siddhi").unlink()
        wait_for(lambda: (apps := leader.json("/siddhi-apps")) is not None and app not in apps,
                 30,
                 "the deleted file's app to be undeployed")
        with leader.client() as client:
            assert client.get(f"/siddhi-apps/{app}").status_code == 404

        leader.kill()
        wait_for(lambda: _leader(managers) is follower, 30, "the other manager to lead")
        wait_for(lambda: ignored in (follower.json("/siddhi-apps") or []), 30,
                 "the new leader to deploy the app of its own folder")
    finally:
        for node in managers:
            node.stop()
