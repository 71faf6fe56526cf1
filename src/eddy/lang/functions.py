"""The function registry: every function, aggregator, window and stream function eddy knows.

The semantic analyser asks the registry three things about a call such as ``sum(v)``,
``#window.length(3)`` or ``#pol2Cart(t, r)``: does the name exist (:meth:`Registry.lookup`,
with :meth:`Registry.suggest` for a misspelling), are the arguments acceptable, and what type
does the call produce (:meth:`Registry.check_call`)? :data:`REGISTRY` holds the built-ins,
loaded from :mod:`eddy.lang.builtins` at import.

Siddhi describes each extension with parameter overloads: positional lists of parameters, each
accepting a set of types, some of which must be constants (Siddhi's non-``dynamic``
parameters). A :class:`Signature` is one such overload. Two shorthands keep the lists short:

* an ``optional`` parameter may be left out *anywhere* (``timeBatch(t, [start], [current])``
  accepts ``(t)``, ``(t, start)``, ``(t, current)`` and ``(t, start, current)``); where Siddhi
  only allows a prefix, use :func:`overloads`, which spells out one signature per prefix;
* a ``variadic`` parameter is last and takes one or more arguments (zero or more when also
  ``optional``), like Siddhi's ``arg, ...``.

Type checks that relate arguments to each other (``coalesce`` wants one type throughout,
``convert`` rejects ``'int'`` for an OBJECT) live in a spec's ``validate`` hook, and the
result type comes from its ``returns`` rule; both see the argument types and the constant
values (``None`` for an argument that is not a constant, which includes a ``null`` literal).

Names: Siddhi matches function names case-sensitively. eddy is tolerant: :meth:`Registry.lookup`
tries the exact spelling first, then a case-insensitive match (so ``ifthenelse`` resolves to
``ifThenElse``), unless two registered names differ only by case.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Literal, get_args

from eddy.lang.ast import AttrType
from eddy.lang.errors import did_you_mean

Kind = Literal["scalar", "aggregate", "window", "stream"]
KINDS: tuple[Kind, ...] = get_args(Kind)

ReturnRule = Callable[[Sequence[AttrType], Sequence[object | None]], AttrType]
"""Argument types and constant values (``None`` when not a constant) -> the result type."""

Validator = Callable[[Sequence[AttrType], Sequence[object | None]], None]
"""Cross-argument checks run after a signature matched; raises :class:`TypeMismatch`."""

ExtraAttributes = Callable[[Sequence[AttrType], Sequence[object | None]],
                           tuple[tuple[str, AttrType], ...]]
"""The ``(name, type)`` attributes a stream function or window appends to its stream."""

# Siddhi's own order for type lists, as in its messages: "<INT|LONG|DOUBLE|FLOAT>".
_TYPE_ORDER: tuple[AttrType, ...] = (AttrType.INT, AttrType.LONG, AttrType.DOUBLE,
                                     AttrType.FLOAT, AttrType.STRING, AttrType.BOOL,
                                     AttrType.OBJECT)

ANY: frozenset[AttrType] = frozenset(AttrType)
NUMERIC: frozenset[AttrType] = frozenset({AttrType.INT, AttrType.LONG, AttrType.FLOAT,
                                          AttrType.DOUBLE})
PRIMITIVE: frozenset[AttrType] = ANY - {AttrType.OBJECT}
"""Every type except OBJECT."""


def typeset(*types: AttrType) -> frozenset[AttrType]:
    """``frozenset`` of the given types, for :attr:`Param.types`."""
    return frozenset(types)


def types_text(types: Iterable[AttrType]) -> str:
    """``INT|LONG|DOUBLE|FLOAT`` in Siddhi's order, or ``ANY`` for every type."""
    chosen = frozenset(types)
    if chosen == ANY:
        return "ANY"
    return "|".join(t.value for t in _TYPE_ORDER if t in chosen)


@dataclass(frozen=True)
class Param:
    """One parameter of a signature.

    ``constant``: the argument must be a constant (a literal or time value), as for window
    sizes. ``attribute``: the argument must *not* be a constant, because Siddhi needs a stream
    attribute there (``externalTime``'s timestamp, a session key). ``choices``: the allowed
    values of a constant string argument, compared case-insensitively.
    """

    name: str
    types: frozenset[AttrType]
    optional: bool = False
    variadic: bool = False
    constant: bool = False
    attribute: bool = False
    choices: tuple[str, ...] = ()

    def describe(self) -> str:
        """``<INT|LONG> name`` for messages; in brackets when optional, ``...`` after a
        variadic one."""
        text = f"<{types_text(self.types)}> {self.name}" + ("..." if self.variadic else "")
        return f"[{text}]" if self.optional else text


@dataclass(frozen=True)
class Signature:
    """One accepted shape of argument list (a Siddhi parameter overload)."""

    params: tuple[Param, ...]

    def __post_init__(self) -> None:
        for p in self.params[:-1]:
            if p.variadic:
                raise ValueError(f"variadic parameter '{p.name}' must be the last one")

    def describe(self) -> str:
        """``(<INT|LONG|DOUBLE|FLOAT> arg)``; optional parameters in brackets
        (``(<INT> a[, <BOOL> b])``), ``...`` after a repeating one."""
        text = ""
        for p in self.params:
            item = p.describe()
            if p.optional:
                text += f"[, {item[1:]}" if text else item
            else:
                text += f", {item}" if text else item
        return f"({text})"

    def layouts(self, count: int) -> Iterator[tuple[Param, ...]]:
        """Each way of giving ``count`` arguments to these parameters: the parameter each
        argument goes to, in order. Earlier optional parameters are filled first."""
        params = self.params

        def fill(i: int, left: int) -> Iterator[tuple[Param, ...]]:
            if i == len(params):
                if left == 0:
                    yield ()
                return
            p = params[i]
            if p.variadic:
                if left >= (0 if p.optional else 1):
                    yield (p,) * left
                return
            if left > 0:
                for rest in fill(i + 1, left - 1):
                    yield (p, *rest)
            if p.optional:
                yield from fill(i + 1, left)

        return fill(0, count)


@dataclass(frozen=True)
class FunctionSpec:
    """A function, aggregator, window or stream function, and how to type a call of it."""

    namespace: str | None
    name: str
    kind: Kind
    signatures: tuple[Signature, ...]
    returns: ReturnRule | None
    description: str
    extra_attributes: ExtraAttributes | None = None
    validate: Validator | None = None

    @property
    def qualified_name(self) -> str:
        """``name`` or ``namespace:name``."""
        return f"{self.namespace}:{self.name}" if self.namespace else self.name

    @property
    def display(self) -> str:
        """How messages name the call: ``sum()``, ``str:concat()``, ``#window.length()``,
        ``#log()``."""
        if self.kind == "window":
            return f"#window.{self.qualified_name}()"
        if self.kind == "stream":
            return f"#{self.qualified_name}()"
        return f"{self.qualified_name}()"

    def describe(self) -> str:
        """Every accepted signature, ``(…) or (…)``; a chain of overloads that each add one
        parameter (as :func:`overloads` makes) reads ``(<LONG> a[, <INT> b[, <BOOL> c]])``."""
        sigs = self.signatures
        extends = all(
            len(longer.params) == len(shorter.params) + 1
            and longer.params[:-1] == shorter.params
            and not (longer.params[-1].optional or longer.params[-1].variadic)
            for shorter, longer in zip(sigs, sigs[1:]))
        if len(sigs) < 2 or not extends or any(p.optional for p in sigs[0].params):
            return " or ".join(s.describe() for s in sigs)
        text = ", ".join(p.describe() for p in sigs[0].params)
        for longer in sigs[1:]:
            item = longer.params[-1].describe()
            text += f"[, {item}" if text else f"[{item}"
        return f"({text}{']' * (len(sigs) - 1)})"


class TypeMismatch(Exception):
    """Arguments a function does not accept. ``message`` is a sentence a person can act on;
    ``arg_index`` is the 0-based position of the offending argument, when one is to blame."""

    def __init__(self, message: str, *, arg_index: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.arg_index = arg_index


# ---------------------------------------------------------------------------------------------
# Building blocks for specs
# ---------------------------------------------------------------------------------------------

def sig(*params: Param) -> Signature:
    """The signature of ``params``, in order."""
    return Signature(tuple(params))


def overloads(required: Sequence[Param], *optional: Param) -> tuple[Signature, ...]:
    """Siddhi's usual positional overloads: the required parameters, then each longer prefix
    of ``optional`` (``(a)``, ``(a, b)``, ``(a, b, c)``) — later ones need the earlier ones."""
    head = tuple(required)
    return tuple(Signature(head + optional[:i]) for i in range(len(optional) + 1))


def fixed(result: AttrType) -> ReturnRule:
    """Always returns ``result``."""
    def rule(types: Sequence[AttrType], constants: Sequence[object | None]) -> AttrType:
        return result
    return rule


def same_as(index: int) -> ReturnRule:
    """Returns the type of argument ``index``."""
    def rule(types: Sequence[AttrType], constants: Sequence[object | None]) -> AttrType:
        return types[index]
    return rule


def widened(integral: AttrType, floating: AttrType) -> ReturnRule:
    """``integral`` for an INT/LONG first argument, else ``floating`` (``sum``)."""
    def rule(types: Sequence[AttrType], constants: Sequence[object | None]) -> AttrType:
        return integral if types[0] in (AttrType.INT, AttrType.LONG) else floating
    return rule


def all_same_type(display: str) -> Validator:
    """A check that all arguments share one type (``coalesce``, ``maximum``)."""
    def check(types: Sequence[AttrType], constants: Sequence[object | None]) -> None:
        for i, t in enumerate(types):
            if t != types[0]:
                raise TypeMismatch(
                    f"{display} needs arguments of one type, but got {_got(types)}; "
                    "convert them with convert() or cast() first", arg_index=i)
    return check


def _ordinal(index: int) -> str:
    return f"argument {index + 1}"


def _got(types: Sequence[AttrType]) -> str:
    return "(" + ", ".join(t.value for t in types) + ")"


# ---------------------------------------------------------------------------------------------
# The registry
# ---------------------------------------------------------------------------------------------

_Problem = tuple[str, int]  # ("type" | "constant" | "attribute" | "choice", argument index)


class Registry:
    """Specs by kind and qualified name. See the module docstring for name matching."""

    def __init__(self) -> None:
        self._specs: dict[tuple[Kind, str], FunctionSpec] = {}
        self._folded: dict[tuple[Kind, str], list[FunctionSpec]] = {}

    def register(self, spec: FunctionSpec, *, replace: bool = False) -> None:
        """Adds ``spec``; registering a name twice is an error unless ``replace``."""
        if spec.kind not in KINDS:
            raise ValueError(f"unknown kind {spec.kind!r}")
        if spec.namespace == "":
            raise ValueError("use namespace=None, not '', for a core function")
        if not spec.signatures:
            raise ValueError(f"{spec.display} needs at least one signature")
        key = (spec.kind, spec.qualified_name)
        old = self._specs.get(key)
        if old is not None:
            if not replace:
                raise ValueError(f"{spec.kind} '{spec.qualified_name}' is already registered")
            self._folded[(spec.kind, spec.qualified_name.lower())].remove(old)
        self._specs[key] = spec
        self._folded.setdefault((spec.kind, spec.qualified_name.lower()), []).append(spec)

    def copy(self) -> Registry:
        """An independent registry with the same specs (to add app-specific ones)."""
        other = Registry()
        for spec in self._specs.values():
            other.register(spec)
        return other

    def lookup(self, kind: Kind, namespace: str | None, name: str) -> FunctionSpec | None:
        """The spec called ``name`` (in ``namespace``): exact spelling first, then ignoring
        case when that is unambiguous."""
        qualified = f"{namespace}:{name}" if namespace else name
        spec = self._specs.get((kind, qualified))
        if spec is not None:
            return spec
        folded = self._folded.get((kind, qualified.lower()), [])
        return folded[0] if len(folded) == 1 else None

    def specs(self, kind: Kind | None = None) -> list[FunctionSpec]:
        """Every spec (of ``kind``), sorted by qualified name — for docs and ``eddy explain``."""
        return sorted((s for (k, _), s in self._specs.items() if kind is None or k == kind),
                      key=lambda s: (s.kind, s.qualified_name.lower(), s.qualified_name))

    def names(self, kind: Kind) -> list[str]:
        """Qualified names of ``kind``, sorted."""
        return sorted(q for (k, q) in self._specs if k == kind)

    def suggest(self, kind: Kind, namespace: str | None, name: str) -> str | None:
        """The qualified name closest to a misspelt one, or None. Names in the same namespace
        are preferred; scalar functions and aggregators are one pool, as both are called
        the same way."""
        kinds: tuple[Kind, ...] = (kind,)
        if kind in ("scalar", "aggregate"):
            kinds = (kind, "aggregate" if kind == "scalar" else "scalar")
        pool = [s for k in kinds for s in self.specs(k)]
        local = {s.name: s for s in reversed(pool)
                 if (s.namespace or "").lower() == (namespace or "").lower()}
        guess = did_you_mean(name, local)
        if guess is not None:
            return local[guess].qualified_name
        qualified = f"{namespace}:{name}" if namespace else name
        return did_you_mean(qualified, [s.qualified_name for s in pool])

    def is_aggregate(self, namespace: str | None, name: str) -> bool:
        """Whether ``namespace:name`` is an aggregator (and not a scalar function, which Siddhi
        resolves first)."""
        return (self.lookup("scalar", namespace, name) is None
                and self.lookup("aggregate", namespace, name) is not None)

    def check_call(self, spec: FunctionSpec, arg_types: Sequence[AttrType],
                   constants: Sequence[object | None]) -> AttrType | None:
        """The result type of calling ``spec`` with arguments of ``arg_types`` whose constant
        values are ``constants`` (None for a non-constant); None for windows and stream
        functions. Raises :class:`TypeMismatch` when no signature accepts the arguments or a
        cross-argument check fails."""
        if len(constants) != len(arg_types):
            raise ValueError(f"{len(arg_types)} argument types but {len(constants)} constants")
        types = tuple(arg_types)
        values = tuple(constants)
        near: list[tuple[tuple[Param, ...], _Problem]] = []  # types fit, something else not
        type_failures: list[int] = []  # per layout of the right length: the first bad argument
        for signature in spec.signatures:
            for layout in signature.layouts(len(types)):
                problem = _examine(layout, types, values)
                if problem is None:
                    if spec.validate is not None:
                        spec.validate(types, values)
                    return spec.returns(types, values) if spec.returns is not None else None
                if problem[0] == "type":
                    type_failures.append(problem[1])
                else:
                    near.append((layout, problem))
        if near:
            layout, (what, index) = near[0]
            raise TypeMismatch(_problem_text(spec, layout[index], what, index, values[index]),
                               arg_index=index)
        got = f"not {_got(types)}" if types else "but was called with no arguments"
        # Point at an argument only when every signature of the right length failed there.
        blamed = type_failures[0] if len(set(type_failures)) == 1 else None
        raise TypeMismatch(f"{spec.display} takes {spec.describe()}, {got}", arg_index=blamed)


def _examine(layout: tuple[Param, ...], types: tuple[AttrType, ...],
             values: tuple[object | None, ...]) -> _Problem | None:
    for i, (p, t) in enumerate(zip(layout, types)):
        if t not in p.types:
            return ("type", i)
    for i, (p, v) in enumerate(zip(layout, values)):
        if p.constant and v is None:
            return ("constant", i)
        if p.attribute and v is not None:
            return ("attribute", i)
        if p.choices and v is not None and not (
                isinstance(v, str) and v.lower() in (c.lower() for c in p.choices)):
            return ("choice", i)
    return None


def _problem_text(spec: FunctionSpec, p: Param, what: str, index: int, value: object) -> str:
    where = f"'{p.name}' ({_ordinal(index)})"
    if what == "constant":
        return (f"{spec.display} needs a constant for {where}, such as a literal or a time "
                "value; it cannot change from event to event")
    if what == "attribute":
        return f"{spec.display} needs a stream attribute for {where}, not the constant {value!r}"
    options = ", ".join(f"'{c}'" for c in p.choices)
    return f"{spec.display} does not accept {value!r} for {where}; use one of {options}"


def _load_builtins() -> Registry:
    from eddy.lang.builtins import register_builtins

    registry = Registry()
    register_builtins(registry)
    return registry


REGISTRY: Registry = _load_builtins()
"""The built-in functions, aggregators, windows and stream functions."""

INCREMENTAL_AGGREGATORS: frozenset[str] = frozenset(
    {"sum", "count", "avg", "min", "max", "distinctCount"})
"""The aggregators Siddhi allows in ``define aggregation`` (its ``incrementalAggregator``
namespace); there ``count`` takes no argument."""
