"""Column types eddy's tables share across SQLite, PostgreSQL and MariaDB/MySQL.

MySQL's plain ``TEXT`` and ``BLOB`` stop at 64 KiB, which an app's text, a checkpoint or a
micro-batch's state outgrow; the ``LONG`` variants hold 4 GiB. The other databases have no
such limit, so only the MySQL dialects get the variant.
"""

from __future__ import annotations

from sqlalchemy import LargeBinary, Text
from sqlalchemy.dialects import mysql

LONG_TEXT = Text().with_variant(mysql.LONGTEXT(), "mysql", "mariadb")
LONG_BLOB = LargeBinary().with_variant(mysql.LONGBLOB(), "mysql", "mariadb")
