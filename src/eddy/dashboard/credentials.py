"""The key that encrypts the nodes' API passwords in ``DASHBOARD_NODES``, and the cipher.

Whoever can read the dashboard's database (its admin, a backup) must not get every node's
admin password, so the ``PASSWORD`` column holds ``enc:v1:`` + base64url(nonce ‖ AES-256-GCM
ciphertext ‖ tag). The authenticated data binds each value to its row's host, port and user
name: a value copied to another row (say, one pointing at the reader's own host) does not
decrypt, so the dashboard never sends it there.

The key is 32 random bytes, base64 in ``<data>/security/eddy-dashboard-nodes.key`` beside the
listener's self-signed key (:mod:`eddy.api.tls`), made on the first start and reused after.
Losing it loses the stored passwords (each node is then re-added with its password); two
dashboards that share one database need the same key file.
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
import os
import secrets
import stat
from pathlib import Path

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from eddy.config import ConfigError

log = logging.getLogger("eddy.dashboard")
KEY_FILE = "eddy-dashboard-nodes.key"
PREFIX = "enc:"
"""Values starting with it are encrypted; any other value is a password an earlier eddy
stored in clear (a clear password that itself starts with ``enc:`` is misread as one)."""
V1 = PREFIX + "v1:"
_KEY_BYTES = 32
_NONCE_BYTES = 12
_TAG_BYTES = 16


class CredentialError(Exception):
    """A stored password that this dashboard's key cannot decrypt."""


def key_file(data_dir: Path) -> Path:
    """Where the key of a dashboard whose data folder is ``data_dir`` is kept."""
    return data_dir / "security" / KEY_FILE


def load_or_create_key(path: Path) -> bytes:
    """The key in ``path``, written on first use (mode 0600 from its creation, never
    replacing a key another dashboard wrote meanwhile); ConfigError when unreadable."""
    if not path.exists():
        _create(path)
    try:
        text = path.read_bytes().strip()
        mode = stat.S_IMODE(path.stat().st_mode)
    except OSError as error:
        raise ConfigError([f"{path}: cannot read the key of the nodes' passwords: "
                           f"{error.strerror or error}"]) from None
    try:
        key = base64.b64decode(text, altchars=b"-_", validate=True)
    except binascii.Error:
        key = b""
    if len(key) != _KEY_BYTES:
        raise ConfigError([f"{path}: not a key of the nodes' passwords (it should hold "
                           f"{_KEY_BYTES} bytes in base64); restore the file the dashboard "
                           f"wrote, or remove it and re-add every node with its password"])
    if mode & 0o077:
        log.warning("%s can be read by others than its owner (mode %o): chmod 600 it", path,
                    mode)
    return key


def _create(path: Path) -> None:
    """Writes a new key to a private staging file, then links it into place: the key is
    never readable by others, never half written, and a key that appeared meanwhile wins."""
    path.parent.mkdir(parents=True, exist_ok=True)
    staging = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
    fd = os.open(staging, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(base64.urlsafe_b64encode(AESGCM.generate_key(256)) + b"\n")
            handle.flush()
            os.fsync(handle.fileno())
        try:
            os.link(staging, path)
        except FileExistsError:
            pass
    finally:
        staging.unlink(missing_ok=True)
    log.info("made the key of the nodes' passwords: %s (keep it: without it the stored "
             "passwords cannot be read)", path)


class CredentialCipher:
    """Encrypts and decrypts the ``PASSWORD`` of one ``DASHBOARD_NODES`` row."""

    def __init__(self, key: bytes) -> None:
        self._aead = AESGCM(key)

    @staticmethod
    def max_password_bytes(column_length: int) -> int:
        """The longest password whose encrypted value fits a column of that length."""
        encoded = (column_length - len(V1)) // 4 * 3
        return encoded - _NONCE_BYTES - _TAG_BYTES

    def seal(self, password: str, host: str, port: int, username: str) -> str:
        """The stored value of ``password`` for the row (host, port, username)."""
        nonce = os.urandom(_NONCE_BYTES)
        sealed = self._aead.encrypt(nonce, password.encode("utf-8"),
                                    _row(host, port, username))
        return V1 + base64.urlsafe_b64encode(nonce + sealed).decode("ascii")

    def open(self, stored: str, host: str, port: int, username: str) -> str:
        """The password a stored value holds (a clear one as it is); CredentialError when
        this key cannot decrypt it."""
        if not stored.startswith(PREFIX):
            return stored
        node = f"{host}:{port}"
        if not stored.startswith(V1):
            raise CredentialError(f"cannot decrypt the stored credentials of node {node}: "
                                  f"they were written by a newer eddy ({stored[:8]}…)")
        try:
            raw = base64.urlsafe_b64decode(stored[len(V1):].encode("ascii"))
            clear = self._aead.decrypt(raw[:_NONCE_BYTES], raw[_NONCE_BYTES:],
                                       _row(host, port, username))
            return clear.decode("utf-8")
        except (InvalidTag, ValueError, binascii.Error):
            raise CredentialError(
                f"cannot decrypt the stored credentials of node {node} (another key, or "
                f"the row was changed): remove it and re-add it with its password") from None


def _row(host: str, port: int, username: str) -> bytes:
    """The authenticated data of a row: unambiguous whatever the names hold."""
    return json.dumps(["DASHBOARD_NODES", host, port, username]).encode("utf-8")
