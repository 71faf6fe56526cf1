"""The file source: lines in, a saved position, and a restart that resumes there without
losing or repeating events — also after a crash between the append and saving the position."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from io_samples import Landing, wait_until

from eddy.io import build_sources
from eddy.io.sources.file_position import FilePosition
from eddy.io.sources.file_source import FileSource


def app(path: Path, *options: str, mapper: str = "@map(type='json')",
        on_error: str = "LOG") -> str:
    extra = "".join(f", {o}" for o in options)
    return f"""
        @app:name('Files')
        @OnError(action='{on_error}')
        @source(type='file', file.uri='file:{path}', file.polling.interval='20'{extra},
                {mapper})
        define stream Temps (room int, temp double);
    """


def file_source(landed: Landing) -> FileSource:
    (source,) = build_sources(landed.analyzed, landed.config)
    assert isinstance(source, FileSource)
    return source


def lines(*rooms: int) -> str:
    return "".join(json.dumps({"room": r, "temp": r / 2}) + "\n" for r in rooms)


def rooms(landed: Landing) -> list[int]:
    return [row["room"] for row in landed.rows("Temps")]


def test_tails_the_file_and_resumes_after_a_restart(
        tmp_path: Path, landing: Callable[[str], Landing]) -> None:
    data = tmp_path / "temps.jsonl"
    data.write_text(lines(1, 2, 3))
    landed = landing(app(data))
    first = file_source(landed)
    landed.start(first)
    wait_until(lambda: rooms(landed) == [1, 2, 3], what="the first three lines")
    with open(data, "a") as out:
        out.write(lines(4) + '{"room": 5, "te')  # a line still being written
    wait_until(lambda: rooms(landed) == [1, 2, 3, 4], what="the appended line")
    first.stop()
    assert FilePosition.load(first.position_file).position == len(lines(1, 2, 3, 4))

    with open(data, "a") as out:
        out.write('mp": 2.5}\n' + lines(6))
    second = file_source(landed)  # a new process would build it the same way
    landed.start(second)
    wait_until(lambda: rooms(landed) == [1, 2, 3, 4, 5, 6], what="the lines after the restart")


def test_a_crash_before_saving_the_position_does_not_repeat_events(
        tmp_path: Path, landing: Callable[[str], Landing]) -> None:
    data = tmp_path / "temps.jsonl"
    data.write_text(lines(1, 2))
    landed = landing(app(data))
    first = file_source(landed)
    landed.start(first)
    wait_until(lambda: rooms(landed) == [1, 2], what="the first two lines")
    first.stop()
    # The crash: the events of bytes [0, end) are on the bus, but the position file still
    # says the range is pending, as it does between the append and the save.
    end = FilePosition.load(first.position_file).position
    FilePosition(0, end, 0, data.stat().st_ino).save(first.position_file)
    with open(data, "a") as out:
        out.write(lines(3))
    second = file_source(landed)
    landed.start(second)
    wait_until(lambda: second.position == len(lines(1, 2, 3)), what="the restart to catch up")
    assert rooms(landed) == [1, 2, 3]


def test_csv_header_and_bad_lines(tmp_path: Path, landing: Callable[[str], Landing]) -> None:
    data = tmp_path / "temps.csv"
    data.write_text("temp,room\n1.5,1\nhot,2\n3.5,3\n")
    landed = landing(app(data, "tailing='false'", on_error="STREAM",
                         mapper="@map(type='csv', header.present='true')"))
    source = file_source(landed)
    landed.start(source)
    wait_until(source.finished.is_set, what="the whole file to be read")
    assert rooms(landed) == [1, 3]
    (fault,) = landed.faults("Temps")
    assert json.loads(fault["_error"])["payload"] == "hot,2"
    source.stop()
    # Restarting reads nothing again, header included.
    again = file_source(landed)
    landed.start(again)
    wait_until(again.finished.is_set, what="the restarted source to finish")
    assert rooms(landed) == [1, 3] and len(landed.faults("Temps")) == 1


def test_a_truncated_file_is_read_from_the_start(
        tmp_path: Path, landing: Callable[[str], Landing]) -> None:
    data = tmp_path / "temps.jsonl"
    data.write_text(lines(1, 2, 3))
    landed = landing(app(data))
    source = landed.start(file_source(landed))
    wait_until(lambda: rooms(landed) == [1, 2, 3], what="the first lines")
    data.write_text(lines(7))  # shorter than what was read
    wait_until(lambda: rooms(landed) == [1, 2, 3, 7], what="the rewritten file")
    assert isinstance(source, FileSource)


def test_whole_file_mode_reads_one_payload(tmp_path: Path,
                                           landing: Callable[[str], Landing]) -> None:
    data = tmp_path / "batch.json"
    data.write_text(json.dumps([{"room": 1, "temp": 1.0}, {"room": 2, "temp": 2.0}], indent=2))
    landed = landing(app(data, "mode='text.full'"))
    source = file_source(landed)
    landed.start(source)
    wait_until(source.finished.is_set, what="the file to be read")
    assert rooms(landed) == [1, 2]
