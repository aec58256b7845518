"""`swarm web` over TLS off loopback: a self-signed certificate made here (`cryptography`), the
server on 0.0.0.0 with ``--tls-cert`` and ``--tls-key``; HTTPS verified against that
certificate with the token gets the state, without it 401, plain HTTP to the same port fails;
off loopback with neither TLS nor ``--insecure`` the server refuses to start."""

from __future__ import annotations

import datetime
import ipaddress
import ssl
import sys
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx2
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from helpers import Processes, read_lines, swarm, wait_for

from protocols.team.file import TeamFile

SERVER_NAME = "localhost"


def self_signed(directory: Path) -> tuple[Path, Path]:
    """A key and a certificate for ``localhost`` and 127.0.0.1 (its SAN), PEM files."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, SERVER_NAME)])
    now = datetime.datetime.now(datetime.UTC)
    san = [x509.DNSName(SERVER_NAME), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName(san), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    key_file, cert_file = directory / "key.pem", directory / "cert.pem"
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return cert_file, key_file


def test_https_off_loopback(team: TeamFile, procs: Processes, tmp_path: Path) -> None:
    cert, key = self_signed(tmp_path)
    argv = [sys.executable, "-m", "swarm", "web", "--team", "t", "--listen", "0.0.0.0:0"]
    proc = procs.start([*argv, "--tls-cert", str(cert), "--tls-key", str(key)])
    lines = read_lines(proc)
    wait_for(lambda: len(lines) >= 3 or proc.poll() is not None, "swarm web to start")
    assert lines and lines[0].startswith("swarm web: https://0.0.0.0:"), lines
    url = urlsplit(lines[0].removeprefix("swarm web: "))
    token = parse_qs(url.query)["token"][0]
    trusted = ssl.create_default_context(cafile=str(cert))  # this certificate only
    base = f"https://{SERVER_NAME}:{url.port}"
    with httpx2.Client(base_url=base, verify=trusted, timeout=30) as client:
        state = client.get("/api/state", headers={"Authorization": f"Bearer {token}"})
        assert state.status_code == 200, state.text
        assert state.json()["team"] == "t"
        assert {m["name"] for m in state.json()["members"]} >= {"alice", "bob", "carol"}
        assert client.get("/api/state").status_code == 401
        page = client.get("/", params={"token": token})
        assert page.status_code == 200 and "secure" in page.headers["set-cookie"].lower()
    with (
        httpx2.Client(base_url=f"http://127.0.0.1:{url.port}", timeout=30) as plain,
        pytest.raises(httpx2.TransportError),
    ):
        plain.get("/api/state", headers={"Authorization": f"Bearer {token}"})
    untrusting = ssl.create_default_context()  # the system's CAs: the certificate is unknown
    with (
        httpx2.Client(base_url=base, verify=untrusting, timeout=30) as client,
        pytest.raises(httpx2.ConnectError, match="CERTIFICATE_VERIFY_FAILED"),
    ):
        client.get("/api/state", headers={"Authorization": f"Bearer {token}"})
    proc.terminate()
    assert proc.wait(30) == 0


def test_off_loopback_without_tls_is_refused(team: TeamFile, tmp_path: Path) -> None:
    refused = swarm("web", "--listen", "0.0.0.0:0")
    assert refused.returncode != 0
    assert "not a loopback address" in refused.stderr and "--tls-cert" in refused.stderr
    assert "--insecure" in refused.stderr
    cert, _key = self_signed(tmp_path)
    half = swarm("web", "--listen", "0.0.0.0:0", "--tls-cert", str(cert))
    assert half.returncode != 0 and "give both --tls-cert and --tls-key" in half.stderr
