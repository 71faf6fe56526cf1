"""``wso2.carbon`` (the node's identity and port offset) and ``wso2.transport.http`` (the
REST API's listeners), with the store query API's default listeners."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field

from eddy.config.base import Block, Scalar


class Ports(Block):
    offset: int = Field(default=0, ge=0, le=10_000)


class Carbon(Block):
    """``wso2.carbon``: the node's identity; ``ports.offset`` shifts every listener port."""

    type: str = "wso2-sp"
    id: str = Field(default="wso2-sp", min_length=1)
    name: str = "eddy worker"
    ports: Ports = Ports()


# -- wso2.transport.http ---------------------------------------------------------------

class Listener(Block):
    """One ``listenerConfigurations`` entry: an HTTP or HTTPS endpoint of the REST API.

    HTTPS takes its certificate from ``keyStoreFile`` (PKCS#12, or PEM with key and
    certificate; ``keyStorePassword``) or from ``certFile`` + ``keyFile`` (PEM; eddy's keys);
    with neither, eddy generates a self-signed certificate on first start.
    """

    id: str = "default"
    host: str = "127.0.0.1"
    port: int = Field(ge=0, le=65535)
    scheme: Literal["http", "https"] = "http"
    keyStoreFile: Path | None = None
    keyStorePassword: str | None = None
    certPass: str | None = None
    certFile: Path | None = None
    keyFile: Path | None = None


class TransportProperty(Block):
    name: str
    value: Scalar


class Transport(Block):
    transportProperties: list[TransportProperty] = []
    listenerConfigurations: list[Listener] = [
        Listener(id="msf4j-https", port=9443, scheme="https")]


# WSO2's shipped ``siddhi.stores.query.api`` listeners (on loopback, as eddy's other defaults).
STORE_QUERY_DEFAULTS = [Listener(id="default", port=7070),
                        Listener(id="msf4j-https", port=7443, scheme="https")]
