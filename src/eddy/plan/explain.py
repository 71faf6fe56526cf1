"""``eddy explain``: what an app will do, as text for people and JSON for tools.

It shows the streams with their schemas, each query as inputs → operators → output, the
partitions, and the execution groups with their parallelism and the bus topics between
them. Everything is listed in a deterministic order, so the output can be diffed.
"""

from __future__ import annotations

from typing import Any

from eddy.lang import ast
from eddy.lang.formatter import format_expression, format_input, format_selector_tail
from eddy.lang.scope import schema_text
from eddy.lang.semantic import AnalyzedApp, QueryInfo, StreamInfo
from eddy.plan.children import ChildApp
from eddy.plan.model import AppPlan, ExecutionGroup, Subscription
from eddy.plan.physical import GroupPhysicalPlan, QueryChoice


def _handler(handler: ast.StreamHandler) -> str:
    if isinstance(handler, ast.Filter):
        return f"filter[{format_expression(handler.expression)}]"
    args = ", ".join(format_expression(a) for a in handler.args)
    name = f"{handler.namespace}:{handler.name}" if handler.namespace else handler.name
    prefix = "window." if isinstance(handler, ast.Window) else ""
    return f"{prefix}{name}({args})"


def _single(stream: ast.SingleInputStream) -> list[str]:
    name = ("#" if stream.inner else "!" if stream.fault else "") + stream.stream
    if stream.alias:
        name += f" as {stream.alias}"
    return [name] + [_handler(h) for h in stream.handlers]


def _input_steps(source: ast.InputStream) -> list[str]:
    """The input as steps: a stream and each of its handlers, or one step for a join, a
    pattern or sequence, or an anonymous query."""
    match source:
        case ast.SingleInputStream():
            return _single(source)
        case ast.JoinInputStream():
            left, right = " ".join(_single(source.left)), " ".join(_single(source.right))
            side = f", unidirectional {source.unidirectional}" if source.unidirectional else ""
            on = f" on {format_expression(source.on)}" if source.on is not None else ""
            within = ""
            if source.within:
                within = " within " + ", ".join(format_expression(w) for w in source.within)
                within += f" per {format_expression(source.per)}" if source.per else ""
            return [f"{source.join_type}({left} | {right}{side}){on}{within}"]
        case ast.StateInputStream():
            return [f"{source.kind}({format_input(source)})"]
        case ast.AnonymousInputStream():
            return ["(" + " -> ".join(_input_steps(source.query.input)) + ")"]
    return [type(source).__name__]


def _select_steps(info: QueryInfo) -> list[str]:
    """The selection as steps: the selected names (not expressions, which can be long), the
    other selector clauses as written, and the output rate."""
    selector = info.query.selector
    steps = ["select " + ("*" if selector.attributes is None else
                          ", ".join(a.name for a in info.outputs))]
    steps += format_selector_tail(selector)
    rate = info.query.output_rate
    if rate is not None:
        every = f"{rate.value} events" if rate.unit == "events" else f"{rate.value} ms"
        kind = "snapshot" if rate.unit == "snapshot" else rate.type
        steps.append(f"output {kind} every {every}")
    return steps


_TABLE_VERBS = {ast.DeleteStream: "delete from", ast.UpdateStream: "update",
                ast.UpdateOrInsertStream: "update or insert into"}


def _output_step(info: QueryInfo) -> str:
    output = info.query.output
    if isinstance(output, ast.ReturnStream):
        return "return"
    target = ("#" if info.target_kind == "inner" else "") + (info.target or "")
    if isinstance(output, ast.InsertIntoStream):
        events = "" if output.event_type == "current" else f"{output.event_type} events "
        return f"insert {events}into {target}"
    return f"{_TABLE_VERBS[type(output)]} {info.target_kind} {target}"


def query_json(info: QueryInfo) -> dict[str, Any]:
    """One query as ``eddy explain --json`` shows it: inputs, operators, output, schema."""
    return {
        "id": info.id, "inputs": list(info.inputs),
        "operators": _input_steps(info.query.input)[1:] + _select_steps(info),
        "output": _output_step(info), "target": info.target, "target_kind": info.target_kind,
        "schema": [[a.name, a.type.value] for a in info.outputs],
        "aggregates": info.aggregates, "partition": info.partition,
    }


def _subscription(sub: Subscription) -> dict[str, Any]:
    data: dict[str, Any] = {"topic": sub.topic, "stream": sub.stream, "strategy": sub.strategy}
    if sub.key:
        data["key"] = sub.key
    if sub.partitions:
        data["partitions_per_instance"] = [list(p) for p in sub.partitions]
    return data


def _group_json(group: ExecutionGroup) -> dict[str, Any]:
    return {"name": group.name, "parallel": group.parallel,
            "elements": [e.id for e in group.elements], "queries": list(group.queries),
            "inputs": [_subscription(s) for s in group.inputs], "outputs": list(group.outputs)}


def _choice_json(choice: QueryChoice) -> dict[str, Any]:
    chained = {} if choice.producer is None else {"producer": choice.producer}
    return {"query": choice.query, "operator": choice.operator,
            "state_key": {"kind": choice.key.kind,
                          "attributes": [list(a) for a in choice.key.attributes],
                          "buckets": choice.key.buckets},
            "rule": choice.rule, "reason": choice.reason, "text": choice.describe(),
            **chained}


def physical_json(physical: GroupPhysicalPlan) -> dict[str, Any]:
    """The physical plan as ``eddy explain --json`` shows it."""
    return {"group": physical.group, "streams": list(physical.sources.streams),
            "clock": physical.sources.clock, "on_demand": physical.sources.on_demand,
            "queries": [_choice_json(c) for c in physical.queries],
            "runtime": None if physical.runtime is None else _choice_json(physical.runtime),
            "python_operators": list(physical.python_operators()),
            "fused": len(physical.python_operators()) > 1}


def physical_text(physical: GroupPhysicalPlan) -> list[str]:
    """The physical plan as lines: one per query, then the runtime operator if any."""
    out = [f"physical plan of {physical.group}"]
    out += [f"  {choice.describe()}" for choice in physical.queries]
    if physical.runtime is not None:
        out.append(f"  {physical.runtime.describe()}")
    python = physical.python_operators()
    if len(python) > 1:
        out.append(f"  fused: {', '.join(python)} in one Spark stateful operator, "
                   "each with its own state keys")
    return out


def children_json(children: tuple[ChildApp, ...]) -> list[dict[str, Any]]:
    """The child apps as ``eddy explain --json`` shows them: exactly what is deployed."""
    return [{"name": c.name, "parent": c.parent, "group": c.group, "instance": c.instance,
             "receiver": c.receiver, "version": c.version, "text": c.text} for c in children]


def children_text(children: tuple[ChildApp, ...]) -> list[str]:
    """The child apps as lines: a header per child, then its text as deployed."""
    out = ["child apps"]
    for i, child in enumerate(children):
        out += [""] if i else []
        node = "receiver node" if child.receiver else "resource node"
        out.append(f"  {child.name} (group {child.group}, instance {child.instance}, {node}, "
                   f"version {child.version[:12]})")
        out += [f"    {line}" if line else "" for line in child.text.rstrip("\n").split("\n")]
    return out


def explain_json(analyzed: AnalyzedApp, plan: AppPlan,
                 physical: GroupPhysicalPlan | None = None,
                 children: tuple[ChildApp, ...] | None = None) -> dict[str, Any]:
    """The explanation as a JSON-ready dict (with ``physical`` and ``children`` when
    given)."""
    return {
        "app": plan.app,
        "distributed": plan.distributed,
        "streams": [{"name": s.name, "kind": s.kind, "implicit": s.implicit,
                     "schema": [[a.name, a.type.value] for a in s.attributes]}
                    for s in analyzed.streams.values()],
        "inputs": list(plan.inputs), "outputs": list(plan.outputs),
        "queries": [query_json(q) for q in analyzed.queries],
        "partitions": [{"id": f"partition-{i + 1}", "streams": list(p.streams),
                        "keys": [format_expression(t.expression)
                                 if isinstance(t, ast.ValuePartitionType)
                                 else [r.key for r in t.ranges]
                                 for t in p.partition.partition_types],
                        "inner_streams": sorted(p.inner_streams),
                        "queries": [q.id for q in p.queries]}
                       for i, p in enumerate(analyzed.partitions)],
        "execution_groups": [_group_json(g) for g in plan.groups],
        "topics": [{"name": t.name, "stream": t.stream, "producers": list(t.producers),
                    "consumers": [{"group": g, "strategy": s} for g, s in t.consumers],
                    "key": t.key, "partitions": t.partitions} for t in plan.topics],
    } | ({} if physical is None else {"physical": physical_json(physical)}) \
        | ({} if children is None else {"children": children_json(children)})


def explain_text(analyzed: AnalyzedApp, plan: AppPlan,
                 physical: GroupPhysicalPlan | None = None,
                 children: tuple[ChildApp, ...] | None = None) -> str:
    """The explanation as aligned text for a terminal (with ``physical`` and ``children``
    when given)."""
    out = [f"app {plan.app}" + (" (distributed)" if plan.distributed else ""), "", "streams"]
    width = max((len(s) for s in analyzed.streams), default=0)
    for stream in analyzed.streams.values():
        implicit = ", implicit" if stream.implicit else ""
        out.append(f"  {stream.name:<{width}}  {schema_text(stream.attributes)}  "
                   f"[{_role(stream, plan)}{implicit}]")
    out += ["", "queries"]
    for info in analyzed.queries:
        steps = _input_steps(info.query.input) + _select_steps(info) + [_output_step(info)]
        where = (f" (partition-{_partition_no(analyzed, info)})"
                 if info.partition is not None else "")
        out.append(f"  {info.id}{where}: " + " -> ".join(steps))
    if analyzed.partitions:
        out += ["", "partitions"]
        for i, part in enumerate(analyzed.partitions):
            keys = ", ".join(_partition_key(t) for t in part.partition.partition_types)
            inner = f"; inner {', '.join('#' + n for n in sorted(part.inner_streams))}" \
                if part.inner_streams else ""
            out.append(f"  partition-{i + 1}: by {keys}; queries "
                       f"{', '.join(q.id for q in part.queries)}{inner}")
    out += ["", "execution groups"]
    for group in plan.groups:
        out.append(f"  {group.name} (parallel {group.parallel}): "
                   f"{', '.join(e.id for e in group.elements)}")
        for sub in group.inputs:
            key = f" by {sub.key}" if sub.key else ""
            parts = ""
            if sub.partitions:
                parts = " partitions " + " | ".join(
                    ",".join(str(p) for p in inst) for inst in sub.partitions)
            out.append(f"    reads  {sub.stream} <- topic {sub.topic} ({sub.strategy}{key}{parts})")
        if group.outputs:
            out.append(f"    writes {', '.join(group.outputs)}")
    if plan.topics:
        out += ["", "topics"]
        for topic in plan.topics:
            source = ", ".join(topic.producers) or "app input"
            to = ", ".join(f"{g} ({s})" for g, s in topic.consumers)
            parts = (f", {topic.partitions} partitions by {topic.key}"
                     if topic.partitions > 1 else "")
            out.append(f"  {topic.name}: {source} -> {to}{parts}")
    if physical is not None:
        out += [""] + physical_text(physical)
    if children is not None:
        out += [""] + children_text(children)
    return "\n".join(out) + "\n"


def _role(stream: StreamInfo, plan: AppPlan) -> str:
    """``input`` or ``output`` of the app, ``internal`` for a stream between queries, else the
    element's kind (``table``, ``window``, …)."""
    if stream.name in plan.inputs:
        return "input"
    if stream.name in plan.outputs:
        return "output"
    return "internal" if stream.kind == "stream" else stream.kind


def _partition_no(analyzed: AnalyzedApp, info: QueryInfo) -> int:
    for i, part in enumerate(analyzed.partitions):
        if info in part.queries:
            return i + 1
    return 0


def _partition_key(ptype: ast.PartitionType) -> str:
    if isinstance(ptype, ast.ValuePartitionType):
        return f"{format_expression(ptype.expression)} of {ptype.stream}"
    ranges = " or ".join(f"{format_expression(r.condition)} as '{r.key}'" for r in ptype.ranges)
    return f"{ranges} of {ptype.stream}"
