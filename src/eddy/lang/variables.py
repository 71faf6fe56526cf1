"""``${NAME}`` variables in app text, replaced before parsing as Siddhi's manager does.

WSO2 apps keep environment-specific values (hosts, ports, credentials) out of the app text
as ``${NAME}``, filled in from a system property or else an environment variable when the
app is deployed. eddy has no JVM system properties: a caller may pass its own ``properties``
(for instance from configuration), looked up first, then the environment. An unknown name is
an error at the variable's position, never an empty string, because a silently blanked host
or password only fails much later and far from its cause.

Substitution happens once, where an app enters eddy (a file read by the CLI, a deployment
through the worker, ``eddy.replay``), and the substituted text is what runs everywhere after
that, so a Spark worker process never needs the variables. Positions in later errors refer
to the substituted text.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

from eddy.lang.errors import AppIssue, SiddhiAppError, Span

_VARIABLE = re.compile(r"\$\{(\w+)\}")


def substitute(text: str, filename: str | None = None, *,
               properties: Mapping[str, str] | None = None,
               environment: Mapping[str, str] | None = None) -> str:
    """``text`` with every ``${NAME}`` replaced; SiddhiAppError listing each unknown name."""
    if "${" not in text:
        return text
    environment = os.environ if environment is None else environment
    issues: list[AppIssue] = []

    def value(match: re.Match[str]) -> str:
        name = match.group(1)
        found = (properties or {}).get(name, environment.get(name))
        if found is None:
            line = text.count("\n", 0, match.start()) + 1
            column = match.start() - (text.rfind("\n", 0, match.start()) + 1)
            issues.append(AppIssue(
                "syntax", f"no system or environment variable found for '${{{name}}}'",
                Span(line, column, line, column + len(match.group(0))),
                hint=f"set {name} in the environment of the process that deploys the app"))
            return match.group(0)
        return found

    result = _VARIABLE.sub(value, text)
    if issues:
        raise SiddhiAppError(issues, source=text, filename=filename)
    return result
