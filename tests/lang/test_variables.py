"""``${NAME}`` substitution: values from properties, then the environment; unknown names fail
at their position."""

from __future__ import annotations

import pytest

from eddy.lang import check
from eddy.lang.errors import SiddhiAppError
from eddy.lang.variables import substitute

APP = ("@app:name('Test')\n"
       "@source(type='http', receiver.url='http://${HOST}:${PORT}/in', @map(type='json'))\n"
       "define stream ${STREAM} (symbol string, price float);\n")


def test_properties_win_over_the_environment() -> None:
    text = substitute(APP, properties={"STREAM": "Foo"},
                      environment={"STREAM": "Bar", "HOST": "localhost", "PORT": "8006"})
    assert "define stream Foo (" in text
    assert "receiver.url='http://localhost:8006/in'" in text
    assert check(text).streams["Foo"].attributes[1].name == "price"


def test_every_unknown_variable_is_reported_where_it_is() -> None:
    with pytest.raises(SiddhiAppError) as raised:
        substitute(APP, "app.siddhi", environment={"PORT": "1"})
    error = raised.value
    assert [(e.line, e.column, e.span.end_column) for e in error.errors] == \
        [(2, 42, 49), (3, 14, 23)]
    assert error.message == "no system or environment variable found for '${HOST}'"
    assert error.filename == "app.siddhi"


def test_text_without_variables_is_untouched() -> None:
    text = "define stream S (a int); -- costs $5 {not a variable}\n"
    assert substitute(text, environment={}) is text
