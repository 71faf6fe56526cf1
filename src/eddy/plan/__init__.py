"""Logical plan: the query graph, execution groups, bus topics and ``explain`` output."""

from __future__ import annotations

from eddy.plan.groups import build_plan
from eddy.plan.model import AppPlan, ExecutionGroup, Topic

__all__ = ["AppPlan", "ExecutionGroup", "Topic", "build_plan"]
