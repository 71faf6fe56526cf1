"""The README's example, as a user runs it: ``eddy run examples/http-alerts.siddhi`` and
``curl`` events into it. Alerts are printed by the app's log sink; every kind of malformed
payload is answered 400 (or 413) and the ones the mapper read are printed from the fault
stream ``!TempStream`` by the app's own query; the process keeps serving and stops cleanly.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from run_process import START_S, EddyRun, free_port, listening, wait_for

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "http-alerts.siddhi"


def curl(url: str, data: str | bytes, content_type: str = "application/json"
         ) -> tuple[int, str]:
    """``curl -X POST`` as the README shows it; the status and the body of the answer."""
    done = subprocess.run(
        ["curl", "-s", "-X", "POST", url, "-H", f"Content-Type: {content_type}",
         "--data-binary", "@-", "-w", "\n%{http_code}"],
        input=data.encode() if isinstance(data, str) else data, capture_output=True,
        timeout=60, check=True)
    body, _, status = done.stdout.decode().rpartition("\n")
    return int(status), body


@pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")
def test_http_source_to_log_sink_prints_alerts_and_faults(tmp_path: Path) -> None:
    port = free_port()  # the example's port 8006 may be taken on a shared machine
    app = tmp_path / "http-alerts.siddhi"
    app.write_text(EXAMPLE.read_text().replace("127.0.0.1:8006", f"127.0.0.1:{port}"))
    url = f"http://127.0.0.1:{port}/temp"
    eddy = EddyRun(app, tmp_path / "data")
    eddy.start()
    try:
        wait_for(lambda: listening(port), START_S, "the HTTP source")
        status, body = curl(url, '[{"event": {"roomNo": 1, "temp": 45.5}}, '
                                  '{"event": {"roomNo": 2, "temp": 20.0}}]')
        assert (status, json.loads(body)) == (200, {"events": 2})

        bad_json = curl(url, '{"event": {"roomNo": 1, "temp": ')
        wrong_type = curl(url, '{"event": {"roomNo": "one", "temp": 50.0}}')
        missing = curl(url, '{"event": {"roomNo": 7}}')
        wrong_media = curl(url, "roomNo=1,temp=50.0", content_type="text/plain")
        oversized = curl(url, b"[" + b'{"event": {"roomNo": 1, "temp": 1.0}},' * 500_000
                         + b'{"event": {"roomNo": 1, "temp": 1.0}}]')
        assert [r[0] for r in (bad_json, wrong_type, missing, wrong_media, oversized)] == \
            [400, 400, 400, 400, 413]
        assert "invalid JSON" in json.loads(bad_json[1])["error"]
        assert "attribute 'roomNo' (int)" in json.loads(wrong_type[1])["error"]
        assert "attribute 'temp' is missing" in json.loads(missing[1])["error"]
        assert "Content-Type 'text/plain' is not accepted" in json.loads(wrong_media[1])["error"]

        status, body = curl(url, '{"event": {"roomNo": 3, "temp": 41.0}}')  # still serving
        assert (status, json.loads(body)) == (200, {"events": 1})

        def printed(prefix: str, count: int) -> list[str] | None:
            eddy.check_alive()
            lines = [line for line in eddy.stdout.read_text().splitlines()
                     if line.startswith(prefix)]
            return lines if len(lines) >= count else None

        alerts = wait_for(lambda: printed("ALERT : ", 2), START_S, "two alerts")
        assert [line.split("data=")[1] for line in alerts] == [
            "[1, 45.5], isExpired=false}", "[3, 41.0], isExpired=false}"]
        faults = wait_for(lambda: printed("FAULT : ", 3), 60, "three faults")
        assert len(faults) == 3
        assert "invalid JSON" in faults[0] and "data=[null, " in faults[0]
        assert "attribute 'roomNo' (int)" in faults[1]
        assert "attribute 'temp' is missing" in faults[2] and "data=[7, " in faults[2]
    finally:
        eddy.stop()
    assert eddy.process is not None and eddy.process.returncode == 0, eddy.tail()
