"""``DELETE /childApps/{child}/state?version=<content hash>[&positions=false]`` (eddy): a
distributed worker deletes a retired child app's state from the persistence database, and
the bus position that protected it from retention unless ``positions=false`` (a child of
that name lives on in another version of its parent: the position is its).

The manager calls it on any live worker once a parent app is deleted or replaced, for each
child that no longer exists (:meth:`eddy.node.child_state.ChildState.forget`): the worker
that ran the child may be dead, and every worker names the same database. 200 when the
state is gone (or the worker keeps none in a database: nothing to delete); 500 when the
database cannot be reached — the manager asks again in its next round.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from sqlalchemy.exc import SQLAlchemyError

from eddy.api import bodies
from eddy.api.bodies import R401, R500
from eddy.node.worker import Worker
from eddy.store.fence import Fenced


def router(worker: Worker) -> APIRouter:
    """The child state route, bound to one worker."""
    api = APIRouter(tags=["distributed"], responses=R401)

    @api.delete("/childApps/{child}/state", response_model=bodies.ApiResponse,
                responses=R500,
                summary="Delete a retired child app's state from the persistence database")
    def forget(child: str, version: str, positions: bool = True) -> Any:
        state = worker.child_state
        if state is None:
            return bodies.success(f"nothing to delete: worker {worker.config.node_id} keeps "
                                  f"no child app state in a database")
        try:
            had = state.forget(child, version, positions)
        except (SQLAlchemyError, Fenced) as error:
            return bodies.server_error(f"cannot delete the state of {child}: "
                                       f"{str(error).splitlines()[0]}")
        return bodies.success(f"the state of {child} was deleted" if had else
                              f"{child} had no state in the persistence database")

    return api
