"""Calls to one node's HTTP API, with the node's credentials.

Nodes serve HTTPS with a self-signed certificate by default (``eddy worker`` generates one),
which the dashboard cannot know in advance, so it does not verify the node's certificate:
the connection is encrypted, not authenticated. Keep nodes and dashboard on a trusted
network, as WSO2's dashboard assumes too.
"""

from __future__ import annotations

import ssl
from typing import Any

import httpx

from eddy.dashboard.nodes import Node

TIMEOUT_S = 10.0
STORE_QUERY_TIMEOUT_S = 120.0
"""A store query is answered between the app's micro-batches, which a loaded node may take
tens of seconds to reach; the node's own limits bound it too."""


class NodeUnreachable(Exception):
    """The node did not answer, or answered with an error status."""


def _context() -> ssl.SSLContext:
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context


def store_query_url(node: Node, listeners: list[dict[str, Any]]) -> str:
    """The store query endpoint among a node's listeners (HTTPS first), reached at the
    node's own host; NodeUnreachable when the node serves none."""
    ranked = sorted(listeners, key=lambda listener: listener.get("scheme") != "https")
    if not ranked:
        raise NodeUnreachable(f"{node.key}: serves no store query API (siddhi.stores.query.api "
                              f"in its deployment.yaml)")
    listener = ranked[0]
    host = f"[{node.host}]" if ":" in node.host else node.host
    return f"{listener['scheme']}://{host}:{int(listener['port'])}/stores/query"


class NodeClient:
    """An HTTP client bound to one node."""

    def __init__(self, node: Node, timeout_s: float = TIMEOUT_S) -> None:
        self.node = node
        self._http = httpx.AsyncClient(base_url=node.base_url,
                                       auth=(node.username, node.password),
                                       verify=_context(), timeout=timeout_s)
        self._store_url: str | None = None

    async def close(self) -> None:
        await self._http.aclose()

    async def request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        """The node's response, whatever its status; NodeUnreachable when none came, or
        when the node's stored password cannot be decrypted (it is then not called)."""
        if self.node.credentials_error is not None:
            raise NodeUnreachable(self.node.credentials_error)
        try:
            return await self._http.request(method, path, **kwargs)
        except httpx.HTTPError as error:
            raise NodeUnreachable(f"{self.node.key}: {type(error).__name__}: {error}") \
                from None

    async def json(self, path: str, missing: Any = None) -> Any:
        """The JSON body of ``GET path``; ``missing`` on 404."""
        response = await self.request("GET", path)
        if response.status_code == 404:
            return missing
        if response.status_code != 200:
            raise NodeUnreachable(f"{self.node.key}{path}: HTTP {response.status_code}: "
                                  f"{response.text[:200]}")
        return response.json()

    async def text(self, path: str) -> str:
        response = await self.request("GET", path)
        if response.status_code != 200:
            raise NodeUnreachable(f"{self.node.key}{path}: HTTP {response.status_code}")
        return response.text

    async def deploy(self, app_text: str) -> httpx.Response:
        """``PUT /siddhi-apps``: deploys or replaces an app."""
        return await self.request("PUT", "/siddhi-apps", content=app_text.encode("utf-8"),
                                  headers={"Content-Type": "text/plain"})

    async def store_query(self, app: str, query: str) -> httpx.Response:
        """``POST /stores/query`` with column details, on the node's store query listener
        (WSO2 serves that API apart from the node API; ``/system-details`` says where)."""
        url = await self._store_query_url()
        return await self.request("POST", url, timeout=STORE_QUERY_TIMEOUT_S,
                                  json={"appName": app, "query": query, "details": True})

    async def _store_query_url(self) -> str:
        if self._store_url is None:
            details = await self.json("/system-details", missing={})
            self._store_url = store_query_url(self.node, details.get("storeQueryListeners", []))
        return self._store_url
