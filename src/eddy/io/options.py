"""The ``key='value'`` options of an ``@source``/``@sink``/``@map`` annotation, checked.

Every transport and mapper declares the options it knows; an option it does not know is an
error naming the annotation and where it is, so a misspelt option never goes unnoticed
(Siddhi ignores them). Values are text in SiddhiQL; the getters here parse them with a
message that names the option when they cannot.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from eddy.io.errors import IoConfigError
from eddy.lang.ast import Annotation, AnnotationElement
from eddy.lang.errors import Span, did_you_mean

_DURATION = re.compile(r"\s*(\d+)\s*(ms|millis|milliseconds?|s|sec|seconds?|m|min|minutes?)?\s*",
                       re.IGNORECASE)
_DURATION_MS = {"": 1, "ms": 1, "millis": 1, "millisecond": 1, "milliseconds": 1,
                "s": 1000, "sec": 1000, "second": 1000, "seconds": 1000,
                "m": 60_000, "min": 60_000, "minute": 60_000, "minutes": 60_000}


@dataclass(frozen=True)
class Option:
    """An option an annotation accepts; a name ending in ``.*`` accepts a family
    (``regex.*`` takes ``regex.A``, ``regex.B``, …)."""

    name: str
    default: str | None = None
    required: bool = False

    def matches(self, key: str) -> bool:
        """Whether ``key`` (any case) is this option or one of its family."""
        if self.name.endswith(".*"):
            return key.lower().startswith(self.name[:-1].lower())
        return key.lower() == self.name.lower()


def describe(annotation: Annotation) -> str:
    """``@source(type='http')``, or ``@map`` when it has no type: how messages name it."""
    kind = annotation.get("type")
    return f"@{annotation.name}(type='{kind}')" if kind is not None else f"@{annotation.name}"


class Options:
    """The options of one annotation, checked against those it knows (``type`` aside)."""

    def __init__(self, annotation: Annotation, known: Sequence[Option], owner: str,
                 *, positional: bool = False) -> None:
        self.annotation = annotation
        self.owner = owner
        self._known = tuple(known)
        self._values: dict[str, str] = {}
        for element in annotation.elements:
            self._check(element, positional)

    @property
    def where(self) -> str:
        """``@source(type='http') of stream 'S'``: the subject of error messages."""
        return f"{describe(self.annotation)} of {self.owner}"

    def _check(self, element: AnnotationElement, positional: bool) -> None:
        if element.key is None:
            if not positional:
                raise self.error(f"takes key='value' options, not the bare value "
                                 f"'{element.value}'", element.span)
            return
        if element.key.lower() == "type":
            return
        option = next((o for o in self._known if o.matches(element.key)), None)
        if option is None:
            names = [o.name for o in self._known]
            guess = did_you_mean(element.key, names)
            hint = f"did you mean '{guess}'?" if guess else \
                f"known options: {', '.join(names) or 'none'}"
            raise self.error(f"unknown option '{element.key}'", element.span, hint)
        key = element.key if option.name.endswith(".*") else option.name
        if key in self._values:
            raise self.error(f"option '{element.key}' is given twice", element.span)
        self._values[key] = element.value

    def error(self, message: str, span: Span | None = None, hint: str | None = None
              ) -> IoConfigError:
        """An :class:`IoConfigError` about this annotation (at ``span``, else its own)."""
        return IoConfigError(f"{self.where}: {message}", span or self.annotation.span, hint)

    def _span(self, name: str) -> Span:
        for element in self.annotation.elements:
            if element.key is not None and element.key.lower() == name.lower():
                return element.span
        return self.annotation.span

    def _option(self, name: str) -> Option:
        for option in self._known:
            if option.name == name:
                return option
        raise KeyError(f"option {name!r} is not declared")

    def text(self, name: str) -> str | None:
        """The value of ``name``, its default, or None."""
        option = self._option(name)
        value = self._values.get(option.name, option.default)
        if value is None and option.required:
            raise self.error(f"needs the option {name}='…'")
        return value

    def require(self, name: str) -> str:
        """The value of ``name``; an error when it is missing or empty."""
        value = self.text(name)
        if value is None or not value.strip():
            raise self.error(f"needs the option {name}='…'")
        return value

    def flag(self, name: str) -> bool:
        """``'true'`` or ``'false'`` (any case) as a bool."""
        value = (self.text(name) or "false").strip().lower()
        if value not in ("true", "false"):
            raise self.error(f"{name} must be 'true' or 'false', not '{value}'", self._span(name))
        return value == "true"

    def integer(self, name: str, minimum: int = 0) -> int:
        """A whole number of at least ``minimum``."""
        value = (self.text(name) or "").strip()
        if not re.fullmatch(r"[+-]?\d+", value) or int(value) < minimum:
            raise self.error(f"{name} must be a whole number >= {minimum}, not '{value}'",
                             self._span(name))
        return int(value)

    def duration_ms(self, name: str) -> int:
        """A duration: milliseconds, or a number with ``ms``, ``s`` or ``min``."""
        value = self.text(name) or ""
        match = _DURATION.fullmatch(value)
        if match is None:
            raise self.error(f"{name} must be a duration such as '500', '500 ms' or '2 s', "
                             f"not '{value}'", self._span(name))
        return int(match.group(1)) * _DURATION_MS[(match.group(2) or "").lower()]

    def choice(self, name: str, choices: Iterable[str]) -> str:
        """One of ``choices`` (matched ignoring case, returned as declared)."""
        value = self.text(name) or ""
        allowed = list(choices)
        for candidate in allowed:
            if candidate.lower() == value.lower():
                return candidate
        raise self.error(f"{name} must be one of {', '.join(allowed)}, not '{value}'",
                         self._span(name))

    def family(self, prefix: str) -> dict[str, str]:
        """The options of a ``prefix.*`` family by the part after the prefix (``regex.A`` →
        ``A``)."""
        return {key[len(prefix) + 1:]: value for key, value in self._values.items()
                if key.lower().startswith(prefix.lower() + ".")}

    def given(self, name: str) -> bool:
        """Whether the annotation sets ``name`` itself (rather than taking the default)."""
        return self._option(name).name in self._values


def check_nested(annotation: Annotation, allowed: Sequence[str], owner: str) -> None:
    """Rejects nested annotations other than ``allowed`` (matched ignoring case)."""
    for nested in annotation.annotations:
        if not any(nested.is_named(name) for name in allowed):
            accepted = ", ".join(f"@{n}" for n in allowed) or "none"
            raise IoConfigError(f"{describe(annotation)} of {owner}: unexpected nested "
                                f"@{nested.name}", nested.span, f"it accepts {accepted}")
