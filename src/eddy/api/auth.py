"""Basic authentication against the users of ``auth.configs``.

Every endpoint needs a user; changing anything (any method but GET and HEAD) needs a user
in ``adminRole`` (WSO2's ``siddhiApp.manage`` permission; other users only have ``.view``).
Both refusals are 401 in plain text, as in WSO2 SP. Passwords are compared in constant
time, and an unknown user costs the same comparison as a known one.
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping
from typing import Annotated

from fastapi import Depends, HTTPException, Request
from fastapi.security import HTTPBasic, HTTPBasicCredentials

_basic = HTTPBasic(auto_error=False, realm="eddy",
                   description="A user of auth.configs in deployment.yaml")
READ_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
CHALLENGE = {"WWW-Authenticate": 'Basic realm="eddy"'}


def _refuse(message: str) -> HTTPException:
    return HTTPException(status_code=401, detail=message, headers=CHALLENGE)


class Authenticator:
    """The FastAPI dependency that checks a request's credentials; returns the user name."""

    def __init__(self, users: Mapping[str, tuple[str, bool]]) -> None:
        self._users = {name: (password.encode("utf-8"), admin)
                       for name, (password, admin) in users.items()}

    def __call__(self, request: Request,
                 credentials: Annotated[HTTPBasicCredentials | None, Depends(_basic)]) -> str:
        if credentials is None:
            raise _refuse("Authentication required: send a user and password (basic auth)")
        expected, admin = self._users.get(credentials.username, (b"\0" * 32, False))
        given = credentials.password.encode("utf-8")
        if not (hmac.compare_digest(given, expected) and credentials.username in self._users):
            raise _refuse("Authentication failed: wrong user name or password")
        if request.method not in READ_METHODS and not admin:
            raise _refuse(f"User {credentials.username} is not permitted to change apps "
                          f"(not in the admin role)")
        return credentials.username
