"""``@payload("…{{attr}}…")`` templates of sink mappers (Siddhi's custom output mapping).

Each ``{{name}}`` is replaced by the event's value of attribute ``name`` written as Java
writes it (``25.0``, ``true``, ``null``). For JSON templates a placeholder inside a quoted
string is escaped as JSON string content, so a value holding ``"`` keeps the JSON valid.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass

from eddy.io.api import Event
from eddy.io.javafmt import java_string
from eddy.lang.ast import Attribute, AttrType

_PLACEHOLDER = re.compile(r"\{\{\s*([^{}\s]+)\s*\}\}")


@dataclass(frozen=True)
class _Slot:
    index: int
    kind: AttrType
    quoted: bool


class Template:
    """A compiled payload template; ValueError naming an unknown attribute."""

    def __init__(self, text: str, attributes: Sequence[Attribute], *, json_quoting: bool
                 ) -> None:
        names = {a.name: (i, a.type) for i, a in enumerate(attributes)}
        self.text = text
        self._parts: list[str] = []
        self._slots: list[_Slot] = []
        position = 0
        for match in _PLACEHOLDER.finditer(text):
            name = match.group(1)
            if name not in names:
                raise ValueError(f"@payload uses {{{{{name}}}}}, but the stream has no "
                                 f"attribute '{name}' (it has {', '.join(names)})")
            index, kind = names[name]
            before = text[:match.start()]
            quoted = json_quoting and _inside_string(before)
            self._parts.append(text[position:match.start()])
            self._slots.append(_Slot(index, kind, quoted))
            position = match.end()
        self._parts.append(text[position:])

    def render(self, event: Event) -> str:
        """The template filled with the values of ``event``."""
        out = [self._parts[0]]
        for slot, part in zip(self._slots, self._parts[1:]):
            text = java_string(event.data[slot.index], slot.kind)
            out.append(json.dumps(text, ensure_ascii=False)[1:-1] if slot.quoted else text)
            out.append(part)
        return "".join(out)


def _inside_string(before: str) -> bool:
    """Whether JSON text ``before`` ends inside a string literal (an odd count of unescaped
    quotes)."""
    quotes = len(re.findall(r'(?<!\\)(?:\\\\)*"', before))
    return quotes % 2 == 1

