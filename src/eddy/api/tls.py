"""The certificate of an HTTPS listener: configured, or self-signed on first start.

A listener takes ``certFile`` + ``keyFile`` (PEM) or WSO2's ``keyStoreFile`` — PKCS#12 with
``keyStorePassword``, or one PEM file holding key and certificate. Java key stores (JKS)
cannot be read outside Java; the error says how to convert one. Without any of these, the
worker generates a key and a self-signed certificate for localhost and this host under
``<data>/security/`` and reuses them on later starts.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import socket
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import pkcs12
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from eddy.config import ConfigError, Listener, WorkerConfig

SELF_SIGNED_DAYS = 825
_JKS_MAGIC = b"\xfe\xed\xfe\xed"


def certificate_files(config: WorkerConfig, listener: Listener) -> tuple[Path, Path, str | None]:
    """``(certificate, key, key password)`` PEM files for an HTTPS listener."""
    if listener.certFile is not None or listener.keyFile is not None:
        if listener.certFile is None or listener.keyFile is None:
            raise ConfigError([f"listener {listener.id}: certFile and keyFile go together"])
        return (config.resolve(listener.certFile), config.resolve(listener.keyFile),
                listener.certPass)
    if listener.keyStoreFile is not None:
        return _from_key_store(config, listener)
    cert, key = self_signed(config.data_dir / "security")
    return cert, key, None


def _from_key_store(config: WorkerConfig, listener: Listener) -> tuple[Path, Path, str | None]:
    assert listener.keyStoreFile is not None
    path = config.resolve(listener.keyStoreFile)
    try:
        data = path.read_bytes()
    except OSError as error:
        raise ConfigError([f"listener {listener.id}: keyStoreFile {path}: "
                           f"{error.strerror or error}"]) from None
    if data.startswith(_JKS_MAGIC):
        raise ConfigError([
            f"listener {listener.id}: {path} is a Java key store (JKS), which eddy cannot "
            f"read; convert it: keytool -importkeystore -srckeystore {path.name} "
            f"-destkeystore keystore.p12 -deststoretype PKCS12"])
    if b"-----BEGIN" in data:
        return path, path, listener.certPass or listener.keyStorePassword
    password = (listener.keyStorePassword or "").encode() or None
    try:
        key, cert, _ = pkcs12.load_key_and_certificates(data, password)
    except ValueError as error:
        raise ConfigError([f"listener {listener.id}: cannot open {path} as PKCS#12 "
                           f"(keyStorePassword?): {error}"]) from None
    if key is None or cert is None:
        raise ConfigError([f"listener {listener.id}: {path} holds no key and certificate"])
    out = config.data_dir / "security" / f"{listener.id}.pem"
    out.parent.mkdir(parents=True, exist_ok=True)
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption())
    _write_private(out, pem + cert.public_bytes(serialization.Encoding.PEM))
    return out, out, None


def self_signed(folder: Path) -> tuple[Path, Path]:
    """The worker's self-signed certificate and key, made on first use."""
    cert_path, key_path = folder / "eddy-worker.crt", folder / "eddy-worker.key"
    if cert_path.is_file() and key_path.is_file():
        return cert_path, key_path
    folder.mkdir(parents=True, exist_ok=True)
    key = ec.generate_private_key(ec.SECP256R1())
    host = socket.gethostname()
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost"),
                      x509.NameAttribute(NameOID.ORGANIZATION_NAME, "eddy worker")])
    now = datetime.datetime.now(datetime.UTC)
    alt_names: list[x509.GeneralName] = [
        x509.DNSName("localhost"), x509.DNSName(host),
        x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
        x509.IPAddress(ipaddress.ip_address("::1"))]
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=SELF_SIGNED_DAYS))
            .add_extension(x509.SubjectAlternativeName(alt_names), critical=False)
            # Its own issuer, so clients that trust this file (curl --cacert, requests'
            # verify=, strict X.509 checks) accept it as the root of its one-link chain.
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(x509.KeyUsage(
                digital_signature=True, key_cert_sign=True, content_commitment=False,
                key_encipherment=False, data_encipherment=False, key_agreement=False,
                crl_sign=False, encipher_only=False, decipher_only=False), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]),
                           critical=False)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()),
                           critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(
                key.public_key()), critical=False)
            .sign(key, hashes.SHA256()))
    _write_private(key_path, key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption()))
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return cert_path, key_path


def _write_private(path: Path, data: bytes) -> None:
    """Writes a file only its owner can read."""
    staging = path.with_name(f".{path.name}.tmp")
    fd = os.open(staging, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
    os.replace(staging, path)
