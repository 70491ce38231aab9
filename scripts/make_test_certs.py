# SPDX-License-Identifier: Apache-2.0
"""Write the test certificates under tests/certs/: a CA, a server
certificate for the simulated node names and addresses, and a client
certificate, each with its RSA key (docs/sockets.md, "TLS").

Run by hand (`python scripts/make_test_certs.py [DIR]`); the files are
checked in, so tests never make keys. The keys are RSA: an RSA signature is
as long as its modulus, whatever OpenSSL's randomness, so a TLS handshake's
byte counts (and so askew's trace) do not depend on it (an ECDSA signature's
DER length does). Validity runs from 2000 to 2099: a run checks a
certificate against virtual time under askew-exec (2020-01-01 plus the run's
seconds) and against the host's clock without it, and both must fall inside.
"""

from __future__ import annotations

import datetime
import ipaddress
import sys
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

NOT_BEFORE = datetime.datetime(2000, 1, 1, tzinfo=datetime.UTC)
NOT_AFTER = datetime.datetime(2099, 12, 31, 23, 59, 59, tzinfo=datetime.UTC)
# The names a test server answers to: askew's default hostnames, a spawn
# name, loopback, and the first node addresses (docs/sockets.md).
SERVER_NAMES = ["localhost", "db", *(f"node-{i}" for i in range(16))]
SERVER_IPS = ["127.0.0.1", *(f"10.0.0.{i}" for i in range(1, 17))]


def _key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def _name(common: str) -> x509.Name:
    return x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "askew tests"),
            x509.NameAttribute(NameOID.COMMON_NAME, common),
        ]
    )


def _builder(
    subject: x509.Name, issuer: x509.Name, key: rsa.RSAPrivateKey
) -> x509.CertificateBuilder:
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(NOT_BEFORE)
        .not_valid_after(NOT_AFTER)
    )


def _leaf(
    ca: x509.Certificate,
    ca_key: rsa.RSAPrivateKey,
    common: str,
    usage: x509.ObjectIdentifier,
    names: list[x509.GeneralName],
) -> tuple[x509.Certificate, rsa.RSAPrivateKey]:
    key = _key()
    builder = (
        _builder(_name(common), ca.subject, key)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
            critical=False,
        )
    )
    if names:
        builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
    return builder.sign(ca_key, hashes.SHA256()), key


def _write(out: Path, stem: str, cert: x509.Certificate, key: rsa.RSAPrivateKey | None) -> None:
    (out / f"{stem}.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    if key is None:
        return  # the CA's key is not kept: nothing signs with it after this script
    (out / f"{stem}.key").write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.TraditionalOpenSSL,
            serialization.NoEncryption(),
        )
    )


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    ca_key = _key()
    ca_name = _name("askew test CA")
    ca = (
        _builder(ca_name, ca_name, ca_key)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=False,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), False)
        .sign(ca_key, hashes.SHA256())
    )
    _write(out, "ca", ca, None)
    names: list[x509.GeneralName] = [x509.DNSName(n) for n in SERVER_NAMES]
    names += [x509.IPAddress(ipaddress.ip_address(a)) for a in SERVER_IPS]
    server, server_key = _leaf(ca, ca_key, "node-0", ExtendedKeyUsageOID.SERVER_AUTH, names)
    _write(out, "server", server, server_key)
    client, client_key = _leaf(ca, ca_key, "askew client", ExtendedKeyUsageOID.CLIENT_AUTH, [])
    _write(out, "client", client, client_key)


if __name__ == "__main__":
    here = Path(__file__).resolve().parent.parent / "tests" / "certs"
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else here)
