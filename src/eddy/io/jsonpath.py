"""The JSONPath subset Siddhi's JSON mapper is used with: ``$.a.b[0]``, ``$['a b'][-1]``.

A path is ``$`` followed by steps: ``.name``, ``['name']`` / ``["name"]`` and ``[index]``
(negative counts from the end). Filters, wildcards and recursive descent are not supported;
a path that uses them is rejected when the app is deployed, not when an event arrives.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from eddy.io.convert import MISSING, Missing

_STEP = re.compile(r"""
    \.(?P<name>[^.\[\]\s]+)
  | \[\s*(?P<index>-?\d+)\s*\]
  | \[\s*'(?P<single>(?:[^'\\]|\\.)*)'\s*\]
  | \[\s*"(?P<double>(?:[^"\\]|\\.)*)"\s*\]
""", re.VERBOSE)


@dataclass(frozen=True)
class JsonPath:
    """A compiled path; :meth:`get` follows it through parsed JSON."""

    text: str
    steps: tuple[str | int, ...]

    @classmethod
    def parse(cls, text: str) -> JsonPath:
        """Compiles ``text``; ValueError saying what is wrong with it."""
        path = text.strip()
        if not path.startswith("$"):
            raise ValueError(f"JSON path '{text}' must start with '$' (as in '$.a.b')")
        steps: list[str | int] = []
        position = 1
        while position < len(path):
            match = _STEP.match(path, position)
            if match is None:
                raise ValueError(f"JSON path '{text}': cannot read '{path[position:]}'; eddy "
                                 f"supports .name, ['name'] and [index] steps")
            if match.group("index") is not None:
                steps.append(int(match.group("index")))
            else:
                name = match.group("name") or match.group("single") or match.group("double")
                steps.append(re.sub(r"\\(.)", r"\1", name or ""))
            position = match.end()
        return cls(text, tuple(steps))

    def get(self, document: object) -> object | Missing:
        """The value at the path, or :data:`~eddy.io.convert.MISSING` if there is none."""
        value = document
        for step in self.steps:
            if isinstance(step, int):
                if not isinstance(value, list) or not -len(value) <= step < len(value):
                    return MISSING
                value = value[step]
            else:
                if not isinstance(value, dict) or step not in value:
                    return MISSING
                value = value[step]
        return value
