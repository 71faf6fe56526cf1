"""RDBMS access through SQLAlchemy: ``@store`` tables, aggregation tables, metrics tables.

Everything that talks to a relational database goes through :func:`connect`, so a WSO2
``jdbc.url`` (or a named ``wso2.datasources`` entry) reaches the same pooled engine wherever
an app, an aggregation or the worker needs it.
"""

from eddy.store.connect import StoreError, connect, jdbc_to_sqlalchemy, store_url

__all__ = ["StoreError", "connect", "jdbc_to_sqlalchemy", "store_url"]
