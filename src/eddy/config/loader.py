"""Reading deployment.yaml: YAML with each key's line kept, ``${env:NAME}`` substituted, and
every fault reported as ``file:line: key.path: message``."""

from __future__ import annotations

import difflib
import os
import re
import typing
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from eddy.config.base import IGNORED_BLOCKS, ConfigError, Profile, dotted_path
from eddy.config.cross_check import cross_check
from eddy.config.model import DeploymentYaml
from eddy.config.node_config import WorkerConfig


def load_config(path: str | Path | None, profile: Profile = "worker") -> WorkerConfig:
    """The node's configuration from ``path``, or the embedded defaults when None."""
    if path is None:
        return WorkerConfig(DeploymentYaml.model_validate({}), None, profile=profile)
    source = Path(path)
    try:
        text = source.read_text(encoding="utf-8")
    except OSError as error:
        raise ConfigError([f"{source}: cannot read: {error.strerror or error}"]) from None
    return parse_config(text, source, profile)


def parse_config(text: str, source: Path, profile: Profile = "worker") -> WorkerConfig:
    """Validates deployment.yaml text; :class:`ConfigError` names the line and key path."""
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        line = f"{mark.line + 1}:" if mark is not None else ""
        problem = getattr(error, "problem", None) or str(error)
        raise ConfigError([f"{source}:{line} not valid YAML: {problem}"]) from None
    reader = _Reader(source)
    data = reader.plain(root, ()) if root is not None else {}
    lines, faults = reader.lines, reader.faults
    if not isinstance(data, dict):
        raise ConfigError([f"{source}:1: the file must be a mapping of keys to blocks"])
    ignored = tuple(sorted(k for k in data if k in IGNORED_BLOCKS))
    for key in ignored:
        del data[key]
    try:
        model = DeploymentYaml.model_validate(data)
    except ValidationError as error:
        faults += [_describe(e, lines, source) for e in error.errors()]
    else:
        faults += cross_check(model, lines, source, profile)
    if faults:
        prefix = len(f"{source}:")
        raise ConfigError(sorted(faults, key=lambda f: int(f[prefix:].split(":")[0])))
    return WorkerConfig(model, source, ignored, profile)


_ENV = re.compile(r"\$\{env:([A-Za-z_][A-Za-z0-9_]*)\}")


class _Reader:
    """Turns composed YAML nodes into Python values, recording each key's line."""

    def __init__(self, source: Path) -> None:
        self.source = source
        self.lines: dict[tuple[str | int, ...], int] = {}
        self.faults: list[str] = []
        self._constructor = yaml.SafeLoader("")

    def plain(self, node: yaml.Node, path: tuple[str | int, ...]) -> Any:
        """The value of ``node`` at key path ``path``, with ``${env:NAME}`` substituted."""
        self.lines.setdefault(path, node.start_mark.line + 1)
        if isinstance(node, yaml.MappingNode):
            result: dict[str, Any] = {}
            for key_node, value_node in node.value:
                key = str(self._constructor.construct_object(key_node))
                child = (*path, key)
                if key in result:
                    self.faults.append(
                        f"{self.source}:{key_node.start_mark.line + 1}: {dotted_path(child)}: "
                        f"duplicate key (first at line {self.lines[child]})")
                    continue
                self.lines[child] = key_node.start_mark.line + 1
                result[key] = self.plain(value_node, child)
            return result
        if isinstance(node, yaml.SequenceNode):
            return [self.plain(item, (*path, i)) for i, item in enumerate(node.value)]
        value = self._constructor.construct_object(node)
        return _ENV.sub(lambda m: self._env(m.group(1), path), value) \
            if isinstance(value, str) else value

    def _env(self, name: str, path: tuple[str | int, ...]) -> str:
        if name not in os.environ:
            self.faults.append(f"{self.source}:{self.lines[path]}: {dotted_path(path)}: "
                               f"environment variable {name} is not set")
            return ""
        return os.environ[name]


def _describe(error: Any, lines: dict[tuple[str | int, ...], int], source: Path) -> str:
    """One pydantic error as ``file:line: key.path: message``."""
    loc = tuple(p for p in error["loc"] if isinstance(p, (str, int)))
    known = loc
    while known and known not in lines:
        known = known[:-1]
    line = lines.get(known, 1)
    if error["type"] == "extra_forbidden":
        names = _known_keys(loc[:-1])
        suggestion = difflib.get_close_matches(str(loc[-1]), names, n=1, cutoff=0.6)
        hint = (f"; did you mean '{suggestion[0]}'?" if suggestion
                else f"; known keys here: {', '.join(names)}" if names else "")
        return f"{source}:{line}: {dotted_path(loc)}: unknown key{hint}"
    if error["type"] == "missing":
        return f"{source}:{line}: {dotted_path(loc)}: required key is missing"
    message = str(error["msg"]).removeprefix("Value error, ")
    return f"{source}:{line}: {dotted_path(loc)}: {message} (got {error.get('input')!r})"


def _known_keys(loc: tuple[str | int, ...]) -> list[str]:
    """The keys the block at ``loc`` accepts (WSO2's names)."""
    current: Any = DeploymentYaml
    for part in loc:
        current = _unwrap(current)
        if isinstance(part, int) or not (isinstance(current, type)
                                         and issubclass(current, BaseModel)):
            continue
        field = next((f for n, f in current.model_fields.items()
                      if (f.alias or n) == part), None)
        if field is None:
            return []
        current = field.annotation
    current = _unwrap(current)
    if isinstance(current, type) and issubclass(current, BaseModel):
        return [f.alias or n for n, f in current.model_fields.items()]
    return []


def _unwrap(annotation: Any) -> Any:
    """The model class inside ``X | None`` or ``list[X]``, else the annotation itself."""
    for arg in typing.get_args(annotation):
        found = _unwrap(arg)
        if isinstance(found, type) and issubclass(found, BaseModel):
            return found
    return annotation
