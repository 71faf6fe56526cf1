"""The embedded bus: every topic in one SQLite database file, shared by the processes of a host.

Tables:

* ``topics``  — one row per topic: its id and its definition as JSON.
* ``heads``   — one row per (topic, partition): ``next_seq``, the sequence the next event
  gets. An append reads and advances it inside the same write transaction as its inserts,
  so sequences are allocated atomically and without gaps across processes.
* ``batches`` — one row per stored record: (topic, partition, first_seq, last_seq,
  appended_at, nbytes, producer, batch_id, data), ``data`` being an Arrow IPC stream of
  ``_ts`` plus the attributes of events ``first_seq..last_seq``. ``producer``/``batch_id``
  make appends idempotent for as long as the batch is retained.
* ``commits`` — one row per (consumer, topic, partition): the committed position.

The database runs in WAL mode (readers never block the writer), with a busy timeout and
short transactions; ``BEGIN IMMEDIATE`` takes the write lock up front so two appenders
queue instead of failing on a lock upgrade. ``synchronous=normal`` (the default) survives a
crash of any process, like JetStream's default; ``synchronous=full`` also survives a power
loss, at about one fsync per append. WAL checkpoints run beside the writer, not inside its
commits (:mod:`.sqlite_checkpoints`).
"""

from __future__ import annotations

import sqlite3
import threading
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pyarrow as pa  # type: ignore[import-untyped, unused-ignore]

from eddy.bus import arrow_codec
from eddy.bus.api import Bus
from eddy.bus.errors import BusError, SequenceRangeError, TopicConflictError
from eddy.bus.retention import Retention, StoredBatch, removable_prefix
from eddy.bus.sqlite_checkpoints import Checkpointer
from eddy.bus.topic import PartitionRange, TopicSpec

SCHEMA_VERSION = 1
SYNCHRONOUS_MODES = ("normal", "full")
DEFAULT_MAX_RECORD_BYTES = 16 * 1024 * 1024

_SCHEMA = """
CREATE TABLE IF NOT EXISTS topics (
    id    INTEGER PRIMARY KEY,
    name  TEXT NOT NULL UNIQUE,
    spec  TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS heads (
    topic_id  INTEGER NOT NULL,
    partition INTEGER NOT NULL,
    next_seq  INTEGER NOT NULL,
    PRIMARY KEY (topic_id, partition)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS batches (
    id          INTEGER PRIMARY KEY,
    topic_id    INTEGER NOT NULL,
    partition   INTEGER NOT NULL,
    first_seq   INTEGER NOT NULL,
    last_seq    INTEGER NOT NULL,
    appended_at INTEGER NOT NULL,
    nbytes      INTEGER NOT NULL,
    producer    TEXT,
    batch_id    INTEGER,
    data        BLOB NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS batches_by_seq ON batches (topic_id, partition, first_seq);
CREATE INDEX IF NOT EXISTS batches_by_producer ON batches (topic_id, producer, batch_id)
    WHERE producer IS NOT NULL;
CREATE TABLE IF NOT EXISTS commits (
    consumer     TEXT NOT NULL,
    topic_id     INTEGER NOT NULL,
    partition    INTEGER NOT NULL,
    seq          INTEGER NOT NULL,
    committed_at INTEGER NOT NULL,
    PRIMARY KEY (consumer, topic_id, partition)
) WITHOUT ROWID;
"""

# Records overlapping [start, end): from the record holding `start` (the last one that
# begins at or before it) to the last one beginning before `end`; both ends use the index.
_OVERLAPPING = """
SELECT id, first_seq, last_seq FROM batches
WHERE topic_id = :topic AND partition = :partition AND first_seq < :end AND first_seq >= coalesce(
    (SELECT max(first_seq) FROM batches
     WHERE topic_id = :topic AND partition = :partition AND first_seq <= :start), :start)
ORDER BY first_seq
"""


class SqliteBus(Bus):
    """A :class:`Bus` in one SQLite file; open several on the same file from any processes."""

    def __init__(self, path: str | Path, *, retention: Retention | None = None,
                 synchronous: str = "normal", busy_timeout_ms: int = 30_000,
                 compression: str = "none",
                 max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES) -> None:
        super().__init__()
        if synchronous not in SYNCHRONOUS_MODES:
            raise ValueError(f"synchronous must be one of {SYNCHRONOUS_MODES}, not {synchronous!r}")
        arrow_codec.check_compression(compression)
        self.path = Path(path)
        self.retention = retention or Retention()
        self._compression = compression
        self._max_record_bytes = max_record_bytes
        self._topic_ids: dict[str, int] = {}
        self._lock = threading.RLock()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._checkpoints = Checkpointer(self.path, busy_timeout_ms)
        weakref.finalize(self, self._checkpoints.close)
        self._conn: sqlite3.Connection | None = sqlite3.connect(
            self.path, timeout=busy_timeout_ms / 1000, isolation_level=None,
            check_same_thread=False)
        try:
            self._setup(synchronous, busy_timeout_ms)
        except BaseException:
            self.close()
            raise

    def _setup(self, synchronous: str, busy_timeout_ms: int) -> None:
        conn = self._connection()
        conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
        # Only takes effect while the file is still empty; lets trim give space back.
        conn.execute("PRAGMA auto_vacuum = INCREMENTAL")
        mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
        if str(mode).lower() != "wal":
            raise BusError(f"{self.path}: SQLite refused WAL mode (journal_mode={mode})")
        conn.execute(f"PRAGMA synchronous = {synchronous.upper()}")
        conn.execute("PRAGMA wal_autocheckpoint = 0")  # the Checkpointer's thread does it
        with self._transaction() as tx:
            version = tx.execute("PRAGMA user_version").fetchone()[0]
            if version > SCHEMA_VERSION:
                raise BusError(f"{self.path}: bus schema version {version} is newer than "
                               f"this eddy understands ({SCHEMA_VERSION})")
            for statement in _statements():  # not executescript: it would commit first
                tx.execute(statement)
            tx.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

    # -- plumbing ------------------------------------------------------------------------

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            raise BusError(f"bus {self.path} is closed")
        self._check_process()
        return self._conn

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        """A write transaction holding SQLite's write lock from the start."""
        with self._lock:
            conn = self._connection()
            changes = conn.total_changes
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
            if conn.total_changes != changes:
                self._checkpoints.written(conn)

    def _query(self, sql: str, params: tuple[object, ...] | dict[str, object] = ()
               ) -> list[tuple[object, ...]]:
        with self._lock:
            return self._connection().execute(sql, params).fetchall()

    def _topic_id(self, spec: TopicSpec) -> int:
        topic_id = self._topic_ids.get(spec.name)
        if topic_id is None:
            self._load_topic(spec.name)
            topic_id = self._topic_ids[spec.name]
        return topic_id

    # -- topics --------------------------------------------------------------------------

    def create_topic(self, spec: TopicSpec) -> None:
        with self._transaction() as tx:
            row = tx.execute("SELECT id, spec FROM topics WHERE name = ?", (spec.name,)).fetchone()
            if row is not None:
                existing = TopicSpec.from_json(row[1])
                if existing != spec:
                    raise TopicConflictError(
                        f"topic '{spec.name}' already exists as {existing}, not {spec}")
                topic_id = int(row[0])
            else:
                cursor = tx.execute("INSERT INTO topics (name, spec) VALUES (?, ?)",
                                    (spec.name, spec.to_json()))
                topic_id = int(cursor.lastrowid or 0)
                tx.executemany(
                    "INSERT INTO heads (topic_id, partition, next_seq) VALUES (?, ?, 0)",
                    [(topic_id, p) for p in range(spec.partitions)])
        self._topic_ids[spec.name] = topic_id
        self._specs[spec.name] = spec

    def _load_topic(self, name: str) -> TopicSpec | None:
        rows = self._query("SELECT id, spec FROM topics WHERE name = ?", (name,))
        if not rows:
            return None
        self._topic_ids[name] = int(rows[0][0])  # type: ignore[call-overload]
        return TopicSpec.from_json(str(rows[0][1]))

    def topics(self) -> list[TopicSpec]:
        return [TopicSpec.from_json(str(spec))
                for (spec,) in self._query("SELECT spec FROM topics ORDER BY name")]

    # -- writing -------------------------------------------------------------------------

    def _write(self, spec: TopicSpec, parts: list[tuple[int, pa.Table]],
               producer: str | None, batch_id: int | None) -> list[PartitionRange]:
        topic_id = self._topic_id(spec)
        # Encoding happens before the transaction so the write lock is held only briefly.
        records = [(p, arrow_codec.encode_records(table, self._max_record_bytes,
                                                  self._compression))
                   for p, table in parts]
        appended_at = arrow_codec.now_ms()
        with self._transaction() as tx:
            if producer is not None:
                earlier = tx.execute(
                    "SELECT partition, first_seq, last_seq FROM batches "
                    "WHERE topic_id = ? AND producer = ? AND batch_id = ?",
                    (topic_id, producer, batch_id)).fetchall()
                if earlier:
                    return [PartitionRange(*row) for row in earlier]
            ranges = []
            for partition, encoded in records:
                (next_seq,) = tx.execute(
                    "SELECT next_seq FROM heads WHERE topic_id = ? AND partition = ?",
                    (topic_id, partition)).fetchone()
                for rows, record in encoded:
                    tx.execute(
                        "INSERT INTO batches (topic_id, partition, first_seq, last_seq, "
                        "appended_at, nbytes, producer, batch_id, data) "
                        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        (topic_id, partition, next_seq, next_seq + rows - 1, appended_at,
                         record.size, producer, batch_id, memoryview(record)))
                    ranges.append(PartitionRange(partition, next_seq, next_seq + rows - 1))
                    next_seq += rows
                tx.execute("UPDATE heads SET next_seq = ? WHERE topic_id = ? AND partition = ?",
                           (next_seq, topic_id, partition))
            return ranges

    # -- reading -------------------------------------------------------------------------

    def end_offsets(self, topic: str) -> list[int]:
        topic_id = self._topic_id(self.topic(topic))
        return [int(seq) for (seq,) in self._query(  # type: ignore[call-overload]
            "SELECT next_seq FROM heads WHERE topic_id = ? ORDER BY partition", (topic_id,))]

    def start_offsets(self, topic: str) -> list[int]:
        topic_id = self._topic_id(self.topic(topic))
        return [int(seq) for (seq,) in self._query(  # type: ignore[call-overload]
            "SELECT coalesce((SELECT min(b.first_seq) FROM batches b WHERE "
            "b.topic_id = h.topic_id AND b.partition = h.partition), h.next_seq) "
            "FROM heads h WHERE h.topic_id = ? ORDER BY h.partition", (topic_id,))]

    def read(self, topic: str, partition: int, start: int, end: int) -> Iterator[pa.RecordBatch]:
        spec = self._read_spec(topic, partition, start, end)
        topic_id = self._topic_id(spec)
        with self._lock:
            (head,) = self._connection().execute(
                "SELECT next_seq FROM heads WHERE topic_id = ? AND partition = ?",
                (topic_id, partition)).fetchone()
            records = self._connection().execute(_OVERLAPPING, {
                "topic": topic_id, "partition": partition, "start": start, "end": end,
            }).fetchall()
        if end > head:
            raise SequenceRangeError(
                f"topic '{topic}' partition {partition}: cannot read [{start}, {end}), "
                f"events end at {head}")
        if start < end and (not records or records[0][1] > start):
            first = records[0][1] if records else head
            raise SequenceRangeError(
                f"topic '{topic}' partition {partition}: events before {first} were removed "
                f"by retention; cannot read from {start}")
        return self._records(spec, partition, records, start, end)

    def _records(self, spec: TopicSpec, partition: int, records: list[tuple[int, int, int]],
                 start: int, end: int) -> Iterator[pa.RecordBatch]:
        for record_id, first_seq, _ in records:
            rows = self._query("SELECT data FROM batches WHERE id = ?", (record_id,))
            if not rows:
                raise SequenceRangeError(
                    f"topic '{spec.name}' partition {partition}: events from {first_seq} on "
                    f"were removed by retention while being read")
            data = rows[0][0]
            assert isinstance(data, bytes)
            yield from arrow_codec.slice_record(arrow_codec.decode(data), first_seq, start, end)

    # -- consumers and retention ---------------------------------------------------------

    def commit(self, consumer: str, topic: str, partition: int, seq: int) -> None:
        spec = self.topic(topic)
        self._check_partition(spec, partition)
        if seq < 0:
            raise SequenceRangeError(f"topic '{topic}': cannot commit position {seq}")
        with self._lock:
            self._connection().execute(
                "INSERT INTO commits (consumer, topic_id, partition, seq, committed_at) "
                "VALUES (?, ?, ?, ?, ?) ON CONFLICT (consumer, topic_id, partition) "
                "DO UPDATE SET seq = excluded.seq, committed_at = excluded.committed_at",
                (consumer, self._topic_id(spec), partition, seq, arrow_codec.now_ms()))

    def committed(self, consumer: str, topic: str, partition: int) -> int | None:
        spec = self.topic(topic)
        self._check_partition(spec, partition)
        rows = self._query(
            "SELECT seq FROM commits WHERE consumer = ? AND topic_id = ? AND partition = ?",
            (consumer, self._topic_id(spec), partition))
        return int(rows[0][0]) if rows else None  # type: ignore[call-overload]

    def remove_consumer(self, consumer: str) -> None:
        with self._lock:
            self._connection().execute("DELETE FROM commits WHERE consumer = ?", (consumer,))

    def trim(self) -> int:
        if self.retention.unlimited:
            return 0
        removed = 0
        for spec in self.topics():
            for partition in range(spec.partitions):
                removed += self._trim_partition(self._topic_id(spec), partition)
        if removed:
            with self._lock:
                self._connection().execute("PRAGMA incremental_vacuum")
        return removed

    def _trim_partition(self, topic_id: int, partition: int) -> int:
        # Plan with plain reads (WAL: appenders are not blocked), then delete in a short
        # write transaction that re-checks the commits, which may have moved meanwhile.
        key = (topic_id, partition)
        with self._lock:
            conn = self._connection()
            protect_from = _min_commit(conn, key)
            stored, total_bytes = conn.execute(
                "SELECT count(*), coalesce(sum(nbytes), 0) FROM batches "
                "WHERE topic_id = ? AND partition = ?", key).fetchone()
            cursor = conn.execute(
                "SELECT first_seq, last_seq, appended_at, nbytes, id FROM batches "
                "WHERE topic_id = ? AND partition = ? ORDER BY first_seq", key)
            # Like the NATS bus, keep a partition's last batch (see eddy.bus.retention).
            removable = removable_prefix(
                (StoredBatch(*row) for row in cursor), self.retention,
                protect_from=protect_from, now_ms=arrow_codec.now_ms(),
                total_bytes=total_bytes, at_most=stored - 1)
            cursor.close()
        if not removable:
            return 0
        with self._transaction() as tx:
            protect_now = _min_commit(tx, key)
            below = (removable[-1].first_seq, 2**63 - 1 if protect_now is None else protect_now)
            (events,) = tx.execute(
                "SELECT coalesce(sum(last_seq - first_seq + 1), 0) FROM batches WHERE "
                "topic_id = ? AND partition = ? AND first_seq <= ? AND last_seq < ?",
                (*key, *below)).fetchone()
            tx.execute("DELETE FROM batches WHERE topic_id = ? AND partition = ? "
                       "AND first_seq <= ? AND last_seq < ?", (*key, *below))
            return int(events)

    def close(self) -> None:
        self._checkpoints.close()
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None


def _min_commit(conn: sqlite3.Connection, key: tuple[int, int]) -> int | None:
    """The lowest position any consumer committed on (topic id, partition)."""
    (seq,) = conn.execute("SELECT min(seq) FROM commits WHERE topic_id = ? AND partition = ?",
                          key).fetchone()
    return None if seq is None else int(seq)


def _statements() -> list[str]:
    return [s.strip() for s in _SCHEMA.split(";") if s.strip()]
