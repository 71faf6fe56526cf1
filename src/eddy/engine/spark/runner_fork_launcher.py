"""The process Spark starts as a Python stream reader when the fork server runs.

Spark starts ``<pythonExec> -m pyspark.sql.streaming.python_streaming_source_runner`` for
every streaming query over a Python data source; a fresh interpreter spends most of a
second importing pyspark and the source. The launcher script of
:mod:`eddy.engine.spark.runner_forks` runs this file instead (``python -I -S <this file>
<socket> <python> -m <module>``, no site, no eddy: a few ms) to ask the pre-imported fork
server to fork the runner with this process's arguments, environment, working directory and
standard streams (passed as file descriptors), and then stands in for it: it exits with
the runner's status, and when it is killed (Spark stops a runner by destroying its
process) the runner sees its connection close and ends too.

Whenever the server cannot take the request — not started yet, gone, refusing — this
process becomes the runner itself by exec'ing the real interpreter with the original
arguments, exactly as Spark would have started it: the fork server can only make a start
faster, never fail it.

Protocol on the unix socket (both ends are the same interpreter):
launcher → server: 4-byte big-endian length with fds 0, 1, 2 attached (SCM_RIGHTS), then a
``marshal``-ed ``(argv, environ, cwd)`` of that length; runner → launcher: ``b"S"`` + its pid
once it runs, ``b"X"`` + its exit status when it ends (both 4-byte big-endian signed).
"""

import marshal
import os
import socket
import struct
import sys

_HEADER = struct.Struct("!I")
_REPLY = struct.Struct("!ci")
STARTED, EXITED = b"S", b"X"
CONNECT_TIMEOUT_S = 2.0
UNKNOWN_STATUS = 1
"""Our status when the runner vanished without reporting one (killed by a signal)."""


def _receive_reply(conn: socket.socket) -> tuple[bytes, int] | None:
    """The runner's next reply, or None if the connection closed first."""
    data = b""
    while len(data) < _REPLY.size:
        chunk = conn.recv(_REPLY.size - len(data))
        if not chunk:
            return None
        data += chunk
    kind, value = _REPLY.unpack(data)
    return kind, value


def _fork_runner(path: str, argv: list[str]) -> socket.socket | None:
    """The connection to a runner the server forked for us, or None if it did not."""
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.settimeout(CONNECT_TIMEOUT_S)
        conn.connect(path)
        payload = marshal.dumps((argv, dict(os.environ), os.getcwd()))
        socket.send_fds(conn, [_HEADER.pack(len(payload))], [0, 1, 2])
        conn.sendall(payload)
        reply = _receive_reply(conn)  # the server may still be forking: its timeout
    except OSError:
        conn.close()
        return None
    if reply is None or reply[0] != STARTED:
        conn.close()
        return None
    conn.settimeout(None)
    return conn


def main() -> None:
    """``<this file> <socket> <python> <arg>...``: run ``<python> <arg>...`` as a fork."""
    path, python, argv = sys.argv[1], sys.argv[2], sys.argv[3:]
    conn = _fork_runner(path, argv)
    if conn is None:
        os.execv(python, [python, *argv])  # the ordinary start; does not return
    reply = _receive_reply(conn)
    os._exit(reply[1] & 0xFF if reply is not None and reply[0] == EXITED else UNKNOWN_STATUS)


if __name__ == "__main__":
    main()
