"""The columnar operators' outputs cross from Python to the JVM as rows of arrays
(:mod:`eddy.engine.operators.columnar_operator`); the end-to-end tests of each operator check the
outputs through Spark, this one the cut into rows."""

from __future__ import annotations

import numpy as np
import pandas as pd

from eddy.engine.operators.columnar_operator import ARRAY_ROWS, array_rows


def test_outputs_become_rows_of_at_mostarray_rows_elements_in_order() -> None:
    n = 2 * ARRAY_ROWS + 5
    outputs = pd.DataFrame({"_seq": np.arange(n, dtype=np.int64),
                            "o0": np.where(np.arange(n) % 7 == 0, np.nan, np.arange(n) / 2),
                            "o1": np.array([None if i % 5 == 0 else f"k{i}" for i in range(n)],
                                           dtype=object)})
    big = pd.Series([2**62 + i if i % 3 else None for i in range(n)], dtype="Int64")
    outputs["o2"] = big
    rows = array_rows(outputs)
    assert list(rows.columns) == ["_seq", "o0", "o1", "o2"]
    assert [len(cell) for cell in rows["_seq"]] == [ARRAY_ROWS, ARRAY_ROWS, 5]
    # plain Python values, which Arrow converts in bulk (numpy scalars go one by one)
    assert all(type(cell) is list for name in rows.columns for cell in rows[name])
    assert type(rows["_seq"][0][0]) is int and type(rows["o0"][0][1]) is float
    for name in ("_seq", "o0", "o1"):
        joined = np.concatenate(list(rows[name]))
        assert pd.Series(joined).equals(pd.Series(outputs[name].to_numpy()))
    # a nullable long keeps every digit: its cells are Python ints and None, not floats
    assert list(np.concatenate(list(rows["o2"]))) == [None if v is pd.NA else v for v in big]


def test_no_outputs_are_no_rows() -> None:
    rows = array_rows(pd.DataFrame({"_seq": np.empty(0, np.int64)}))
    assert len(rows) == 0 and list(rows.columns) == ["_seq"]
