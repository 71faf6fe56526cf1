"""JDBC URL mapping and real connections to the machine's MariaDB and PostgreSQL."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import text

from eddy.store import StoreError, connect, jdbc_to_sqlalchemy, store_url


@pytest.mark.parametrize(("jdbc", "expected"), [
    ("jdbc:mysql://127.0.0.1:3306/test?useSSL=false", "mysql+pymysql://root@127.0.0.1:3306/test"),
    ("jdbc:mariadb://db.example:3307/agg", "mysql+pymysql://root@db.example:3307/agg"),
    ("jdbc:postgresql://127.0.0.1:5432/test", "postgresql+psycopg://root@127.0.0.1:5432/test"),
    ("jdbc:h2:./database/WSO2_CARBON_DB;DB_CLOSE_ON_EXIT=FALSE",
     "sqlite:///./database/WSO2_CARBON_DB"),
    ("jdbc:sqlite:/tmp/x.db", "sqlite:////tmp/x.db"),
    ("jdbc:sqlite::memory:", "sqlite://"),
])
def test_jdbc_urls_map_to_python_drivers(jdbc: str, expected: str) -> None:
    assert jdbc_to_sqlalchemy(jdbc, "root") == expected


def test_credentials_are_quoted_and_query_user_is_used() -> None:
    assert jdbc_to_sqlalchemy("jdbc:mysql://h/db", "a b", "p@ss") == "mysql+pymysql://a%20b:p%40ss@h/db"
    assert jdbc_to_sqlalchemy("jdbc:postgresql://h/db?user=u&password=p") == \
        "postgresql+psycopg://u:p@h/db"


@pytest.mark.parametrize(("bad", "words"), [
    ("mysql://h/db", "not a JDBC URL"),
    ("jdbc:oracle:thin:@h:1521:x", "no driver for 'jdbc:oracle'"),
    ("jdbc:mysql:///db", "names no host"),
])
def test_unusable_urls_say_why(bad: str, words: str) -> None:
    with pytest.raises(StoreError, match=words):
        jdbc_to_sqlalchemy(bad)


def test_datasource_names_resolve_through_config() -> None:
    sources = {"AGG_DB": {"jdbcUrl": "jdbc:postgresql://127.0.0.1:5432/test",
                          "username": "postgres", "password": None}}
    assert store_url({"datasource": "AGG_DB"}, sources) == \
        "postgresql+psycopg://postgres@127.0.0.1:5432/test"
    with pytest.raises(StoreError, match="unknown datasource 'NOPE'.*AGG_DB"):
        store_url({"datasource": "NOPE"}, sources)


@pytest.mark.parametrize("jdbc", ["jdbc:mysql://127.0.0.1:3306/test",
                                  "jdbc:postgresql://127.0.0.1:5432/test"])
def test_real_servers_answer(jdbc: str) -> None:
    engine = connect(store_url({"jdbc.url": jdbc, "username": "root"}))
    with engine.connect() as connection:
        assert connection.execute(text("SELECT 1")).scalar() == 1
    assert connect(store_url({"jdbc.url": jdbc, "username": "root"})) is engine


def test_sqlite_files_get_their_folder_and_wal(tmp_path: Path) -> None:
    engine = connect(f"sqlite:///{tmp_path}/nested/eddy.db")
    with engine.connect() as connection:
        assert connection.execute(text("PRAGMA journal_mode")).scalar() == "wal"
    assert (tmp_path / "nested" / "eddy.db").exists()
