"""HTML building blocks: the page layout, tables and escaping.

Every value that reaches a page goes through :func:`esc`; the few pieces of markup built
elsewhere are :class:`Markup`, so nothing is escaped twice or forgotten.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence

from eddy.dashboard.sessions import Session

NAV = (("/nodes", "Nodes"), ("/apps", "Apps"), ("/editor", "Editor"), ("/ha", "HA"),
       ("/cluster", "Distributed"))


class Markup(str):
    """Text that is already HTML; adding plain text to it escapes that text."""

    def __add__(self, other: str) -> Markup:
        return Markup(str.__add__(self, esc(other)))


def esc(value: object) -> Markup:
    """``value`` as HTML text (Markup passes as is)."""
    if isinstance(value, Markup):
        return value
    return Markup(html.escape("" if value is None else str(value), quote=True))


def join(parts: Iterable[str]) -> Markup:
    return Markup("".join(esc(p) for p in parts))


def tag(element: str, content: object = "", **attributes: object) -> Markup:
    """``<name attr="…">content</name>``; ``class_`` for ``class``, ``_`` in names → ``-``."""
    attrs = "".join(
        f' {k.rstrip("_").replace("_", "-")}' if v is True
        else f' {k.rstrip("_").replace("_", "-")}="{esc(v)}"'
        for k, v in attributes.items() if v is not None and v is not False)
    return Markup(f"<{element}{attrs}>{esc(content)}</{element}>")


def table(headers: Sequence[str], rows: Iterable[Sequence[object]], caption: str,
          **attributes: object) -> Markup:
    """A table with a caption (read out by screen readers) and header cells."""
    head = join(tag("th", h, scope="col") for h in headers)
    body = join(tag("tr", join(tag("td", cell) for cell in row)) for row in rows)
    return tag("table", join([tag("caption", caption), tag("thead", tag("tr", head)),
                              tag("tbody", body)]), **attributes)


def csrf_field(session: Session) -> Markup:
    return Markup(f'<input type="hidden" name="csrf" value="{esc(session.csrf)}">')


def page(title: str, body: Markup, session: Session | None, active: str = "") -> str:
    """A whole page: head, navigation (when logged in), main content."""
    nav = Markup("")
    if session is not None:
        links = join(tag("a", label, href=href,
                         aria_current="page" if href == active else None)
                     for href, label in NAV)
        logout = Markup(f'<form method="post" action="/logout" class="logout">'
                        f'{csrf_field(session)}<span>{esc(session.user)}</span> '
                        f'<button type="submit">Log out</button></form>')
        nav = tag("nav", join([links, logout]), aria_label="Main")
    csrf = (Markup(f'<meta name="csrf-token" content="{esc(session.csrf)}">')
            if session is not None else Markup(""))
    return (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">{csrf}'
            f'<title>{esc(title)} · eddy dashboard</title>'
            f'<link rel="stylesheet" href="/static/dashboard.css">'
            f'<script src="/static/dashboard.js" defer></script></head><body>'
            f'<a class="skip" href="#main">Skip to content</a>'
            f'<header><span class="brand">eddy dashboard</span>{nav}</header>'
            f'<main id="main" tabindex="-1"><h1>{esc(title)}</h1>{body}</main></body></html>')
