"""How an app's topics map onto JetStream names (deterministic, valid, collision-free).

Names are escaped into ``[A-Za-z0-9_-]``: letters, digits and ``_`` stay, every other byte
of the UTF-8 text becomes ``-XX`` (hex), so ``Temp App`` → ``Temp-20App`` and distinct names
never share an escape. Siddhi identifiers (stream names) therefore appear unchanged.

For app ``A`` (escaped ``a``):

* stream ``EDDY_a`` with subjects ``eddy.a.>``; topic ``T`` partition ``p`` is the subject
  ``eddy.a.<T escaped>.<p>``;
* key-value bucket ``EDDY_a_META`` (JetStream stream ``KV_EDDY_a_META``) holding topic
  definitions under ``topic.<T>`` and committed positions under
  ``commit.<T>.<p>.<consumer escaped>``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_PLAIN = re.compile(r"[A-Za-z0-9_]")


def escape(name: str) -> str:
    """``name`` as a token valid in stream names, subjects and KV keys."""
    return "".join(ch if _PLAIN.fullmatch(ch) else "".join(f"-{b:02X}" for b in ch.encode())
                   for ch in name)


@dataclass(frozen=True)
class NatsNames:
    """The JetStream names of one app's bus."""

    app: str

    def __post_init__(self) -> None:
        if not self.app:
            raise ValueError("a NATS bus needs a non-empty app name")

    @property
    def token(self) -> str:
        return escape(self.app)

    @property
    def stream(self) -> str:
        return f"EDDY_{self.token}"

    @property
    def subjects(self) -> str:
        return f"eddy.{self.token}.>"

    @property
    def bucket(self) -> str:
        return f"EDDY_{self.token}_META"

    @property
    def bucket_stream(self) -> str:
        """The JetStream stream that holds the bucket (JetStream names it so)."""
        return f"KV_{self.bucket}"

    def subject(self, topic: str, partition: int) -> str:
        return f"eddy.{self.token}.{escape(topic)}.{partition}"

    @staticmethod
    def topic_key(topic: str) -> str:
        return f"topic.{escape(topic)}"

    @staticmethod
    def commit_key(topic: str, partition: int, consumer: str) -> str:
        return f"commit.{escape(topic)}.{partition}.{escape(consumer)}"

    @staticmethod
    def commit_keys(topic: str, partition: int) -> str:
        """KV watch pattern of every commit on the partition."""
        return f"commit.{escape(topic)}.{partition}.*"

    @staticmethod
    def consumer_keys(consumer: str) -> str:
        """KV watch pattern of every commit of ``consumer``."""
        return f"commit.*.*.{escape(consumer)}"
