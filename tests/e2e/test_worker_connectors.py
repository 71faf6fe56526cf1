"""``eddy worker`` runs a deployed app's own sources and sinks: an app dropped into the
deployment folder listens on its HTTP source and writes its file sink; deleting the file
undeploys it and closes the port; the worker stops cleanly."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import httpx
from run_process import free_port, listening, wait_for

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "node"))
from worker_process import WorkerProcess  # type: ignore[import-not-found]  # noqa: E402

APP = """@App:name('Relay')
@source(type='http', receiver.url='http://127.0.0.1:{port}/in', @map(type='json'))
define stream In (id long, temp double);

@sink(type='file', file.uri='{out}', @map(type='json'))
define stream Hot (id long, temp double);

from In[temp > 30.0]
select id, temp
insert into Hot;
"""


def test_a_deployed_app_serves_its_source_and_writes_its_sink(tmp_path: Path) -> None:
    port, out = free_port(), tmp_path / "hot.jsonl"
    worker = WorkerProcess(tmp_path / "worker").start()
    try:
        (worker.siddhi_files / "Relay.siddhi").write_text(APP.format(port=port, out=out))
        worker.wait_status("Relay", "active")
        answer = httpx.post(f"http://127.0.0.1:{port}/in",
                            json=[{"id": 1, "temp": 35.5}, {"id": 2, "temp": 20.0},
                                  {"id": 3, "temp": 31.0}])
        assert (answer.status_code, answer.json()) == (200, {"events": 3})

        def written() -> list[dict[str, object]] | None:
            lines = out.read_text().splitlines() if out.exists() else []
            return [json.loads(line)["event"] for line in lines] if len(lines) >= 2 else None

        assert wait_for(written, 180, "the file sink") == [{"id": 1, "temp": 35.5},
                                                           {"id": 3, "temp": 31.0}]
        (worker.siddhi_files / "Relay.siddhi").unlink()
        worker.wait_status("Relay", "absent", timeout=60)
        wait_for(lambda: not listening(port), 30, "the source's port to close")
    finally:
        assert worker.stop() == 0, worker.log_tail()
