"""The columnar operators' outputs cross from Python to the JVM as rows of arrays
(:mod:`eddy.engine.columnar_operator`); the end-to-end tests of each operator check the
outputs through Spark, this one the cut into rows."""

from __future__ import annotations

import numpy as np
import pandas as pd

from eddy.engine.columnar_operator import ARRAY_ROWS, _array_rows


def test_outputs_become_rows_of_at_most_array_rows_elements_in_order() -> None:
    n = 2 * ARRAY_ROWS + 5
    outputs = pd.DataFrame({"_seq": np.arange(n, dtype=np.int64),
                            "o0": np.where(np.arange(n) % 7 == 0, np.nan, np.arange(n) / 2),
                            "o1": np.array([None if i % 5 == 0 else f"k{i}" for i in range(n)],
                                           dtype=object)})
    rows = _array_rows(outputs)
    assert list(rows.columns) == ["_seq", "o0", "o1"]
    assert [len(cell) for cell in rows["_seq"]] == [ARRAY_ROWS, ARRAY_ROWS, 5]
    for name in outputs.columns:
        joined = np.concatenate(list(rows[name]))
        assert pd.Series(joined).equals(pd.Series(outputs[name].to_numpy()))


def test_no_outputs_are_no_rows() -> None:
    rows = _array_rows(pd.DataFrame({"_seq": np.empty(0, np.int64)}))
    assert len(rows) == 0 and list(rows.columns) == ["_seq"]
