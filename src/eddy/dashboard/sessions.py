"""Log-in sessions: a random cookie per session, kept in memory, and a CSRF token per
session that every change (form or script) must send back.

The cookie is ``HttpOnly``, ``Secure`` and ``SameSite=Strict``; the token travels in a
hidden form field or the ``X-CSRF-Token`` header. The log-in form itself is protected by a
token tied to a short-lived pre-session cookie (double submit). Passwords are compared in
constant time. Sessions end after ``IDLE_S`` without a request, at log-out, or when the
dashboard restarts.
"""

from __future__ import annotations

import hmac
import secrets
import time
from collections.abc import Mapping
from dataclasses import dataclass, field

SESSION_COOKIE = "eddy_session"
LOGIN_COOKIE = "eddy_login"
CSRF_HEADER = "x-csrf-token"
IDLE_S = 8 * 3600


@dataclass
class Session:
    user: str
    admin: bool
    csrf: str
    seen: float = field(default_factory=time.monotonic)


class Sessions:
    """The users who may log in and the sessions that are open."""

    def __init__(self, users: Mapping[str, tuple[str, bool]]) -> None:
        self._users = {n: (p.encode("utf-8"), admin) for n, (p, admin) in users.items()}
        self._open: dict[str, Session] = {}

    def log_in(self, user: str, password: str) -> tuple[str, Session] | None:
        """A new session's cookie value and session, or None for wrong credentials."""
        expected, admin = self._users.get(user, (b"\0" * 32, False))
        if not (hmac.compare_digest(password.encode("utf-8"), expected)
                and user in self._users):
            return None
        token = secrets.token_urlsafe(32)
        session = self._open[token] = Session(user, admin, secrets.token_urlsafe(32))
        return token, session

    def get(self, cookie: str | None) -> Session | None:
        """The open session of a cookie value, touched; None when absent or idle too long."""
        if not cookie:
            return None
        session = self._open.get(cookie)
        if session is None:
            return None
        now = time.monotonic()
        if now - session.seen > IDLE_S:
            del self._open[cookie]
            return None
        session.seen = now
        return session

    def log_out(self, cookie: str | None) -> None:
        if cookie:
            self._open.pop(cookie, None)


def same_token(given: str | None, expected: str) -> bool:
    """Whether a CSRF token matches, in constant time."""
    return given is not None and hmac.compare_digest(given.encode(), expected.encode())
