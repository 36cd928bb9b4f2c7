"""TLS to a self-hosted Temporal frontend, the way deploy/ sets it up: only Temporal's
standard TEMPORAL_TLS_* variables, read by `client.connect` (temporalio.envconfig).

The frontend here is a TLS-terminating proxy (asyncio, ALPN h2, optionally requiring
a client certificate) in front of the session's dev server, with a throwaway CA made
by `cryptography`. Plus: the k8s and compose TLS wiring names real variables.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import ipaddress
import os
import re
import ssl
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
from durable_agents.client.connect import connect
from durable_agents.client.errors import ConnectError
from temporalio.api.workflowservice.v1 import DescribeNamespaceRequest
from temporalio.envconfig import ClientConfigProfile

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
SERVER_NAME = "temporal-frontend.test"
"""The name in the server certificate (TEMPORAL_TLS_SERVER_NAME: we dial 127.0.0.1)."""
STEP_TIMEOUT = 10
"""Seconds any connect or call may take here."""


# --- a throwaway PKI -----------------------------------------------------------------


@dataclass(frozen=True)
class Issued:
    """A certificate and its key, as PEM files."""

    cert: Path
    key: Path


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _issue(
    directory: Path,
    stem: str,
    *,
    issuer: tuple[x509.Certificate, ec.EllipticCurvePrivateKey] | None = None,
    san: list[x509.GeneralName] | None = None,
    usage: x509.ObjectIdentifier | None = None,
) -> tuple[Issued, x509.Certificate, ec.EllipticCurvePrivateKey]:
    """A CA certificate (no `issuer`), or a leaf signed by `issuer` for `usage`."""
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    subject = _name(f"durable-agents test {stem}")
    builder = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer[0].subject if issuer else subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.BasicConstraints(ca=issuer is None, path_length=None), critical=True)
    )
    if issuer is None:
        usages = {"key_cert_sign": True, "crl_sign": True, "digital_signature": False}
    else:
        usages = {"key_cert_sign": False, "crl_sign": False, "digital_signature": True}
        builder = builder.add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
    builder = builder.add_extension(
        x509.KeyUsage(
            content_commitment=False,
            key_encipherment=False,
            data_encipherment=False,
            key_agreement=False,
            encipher_only=False,
            decipher_only=False,
            **usages,
        ),
        critical=True,
    )
    if san:
        builder = builder.add_extension(x509.SubjectAlternativeName(san), critical=False)
    cert = builder.sign(issuer[1] if issuer else key, hashes.SHA256())
    issued = Issued(cert=directory / f"{stem}.pem", key=directory / f"{stem}.key")
    issued.cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    issued.key.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return issued, cert, key


@dataclass(frozen=True)
class Pki:
    """The frontend's CA, server and client certificates; another CA and its client."""

    ca: Issued
    server: Issued
    client: Issued
    other_ca: Issued
    stranger: Issued


@pytest.fixture(scope="module")
def pki(tmp_path_factory) -> Pki:
    directory = tmp_path_factory.mktemp("pki")
    ca, ca_cert, ca_key = _issue(directory, "ca")
    san = [x509.DNSName(SERVER_NAME), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
    server, _, _ = _issue(
        directory,
        "server",
        issuer=(ca_cert, ca_key),
        san=san,
        usage=ExtendedKeyUsageOID.SERVER_AUTH,
    )
    client, _, _ = _issue(
        directory,
        "client",
        issuer=(ca_cert, ca_key),
        san=[x509.DNSName("agent-worker")],
        usage=ExtendedKeyUsageOID.CLIENT_AUTH,
    )
    other_ca, other_cert, other_key = _issue(directory, "other-ca")
    stranger, _, _ = _issue(
        directory,
        "stranger",
        issuer=(other_cert, other_key),
        san=[x509.DNSName("agent-worker")],
        usage=ExtendedKeyUsageOID.CLIENT_AUTH,
    )
    return Pki(ca=ca, server=server, client=client, other_ca=other_ca, stranger=stranger)


# --- the TLS frontend ----------------------------------------------------------------


@dataclass
class Frontend:
    """A running TLS frontend."""

    address: str
    """host:port to dial."""
    forwarded: int = 0
    """Connections that completed the TLS handshake and reached the dev server."""


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, ssl.SSLError):
        pass
    finally:
        with contextlib.suppress(Exception):
            writer.close()


@contextlib.asynccontextmanager
async def tls_frontend(
    target: str, pki: Pki, *, require_client_cert: bool = False
) -> AsyncIterator[Frontend]:
    """A TLS-terminating TCP proxy on 127.0.0.1 in front of `target` (host:port, plain
    HTTP/2), with the server certificate of `pki`; with `require_client_cert`, only
    clients with a certificate of `pki`'s CA get through (mTLS)."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(pki.server.cert, pki.server.key)
    context.set_alpn_protocols(["h2"])  # gRPC over TLS negotiates HTTP/2
    if require_client_cert:
        context.verify_mode = ssl.CERT_REQUIRED
        context.load_verify_locations(pki.ca.cert)
    host, _, port = target.rpartition(":")
    tasks: set[asyncio.Task] = set()

    async def forward(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        frontend.forwarded += 1  # called only after a successful handshake
        upstream_reader, upstream_writer = await asyncio.open_connection(host, int(port))
        await asyncio.gather(_pipe(reader, upstream_writer), _pipe(upstream_reader, writer))

    def on_client(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.create_task(forward(reader, writer))
        tasks.add(task)
        task.add_done_callback(tasks.discard)

    server = await asyncio.start_server(on_client, "127.0.0.1", 0, ssl=context)
    frontend = Frontend(address=f"127.0.0.1:{server.sockets[0].getsockname()[1]}")
    try:
        yield frontend
    finally:
        server.close()
        for task in list(tasks):
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await asyncio.wait_for(server.wait_closed(), STEP_TIMEOUT)


# --- connecting with TEMPORAL_TLS_* only ---------------------------------------------


@pytest.fixture
def tls_env(env, monkeypatch) -> Iterator[pytest.MonkeyPatch]:
    """No TEMPORAL_* variable but the namespace: each test sets the ones it shows."""
    for name in [n for n in os.environ if n.startswith("TEMPORAL_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("TEMPORAL_NAMESPACE", env.client.namespace)
    yield monkeypatch


def point_at(monkeypatch, frontend: Frontend, *, ca: Path, client: Issued | None = None) -> None:
    """What deploy/README.md tells a self-hosted user to set."""
    monkeypatch.setenv("TEMPORAL_ADDRESS", frontend.address)
    monkeypatch.setenv("TEMPORAL_TLS", "true")
    monkeypatch.setenv("TEMPORAL_TLS_SERVER_CA_CERT_PATH", str(ca))
    monkeypatch.setenv("TEMPORAL_TLS_SERVER_NAME", SERVER_NAME)
    if client is not None:
        monkeypatch.setenv("TEMPORAL_TLS_CLIENT_CERT_PATH", str(client.cert))
        monkeypatch.setenv("TEMPORAL_TLS_CLIENT_KEY_PATH", str(client.key))


def dev_server(env) -> str:
    return env.client.service_client.config.target_host


async def within(awaitable, seconds: float = STEP_TIMEOUT):
    return await asyncio.wait_for(awaitable, seconds)


async def can_use(client, namespace: str) -> None:
    """Describe the namespace and list workflows through `client`."""
    request = DescribeNamespaceRequest(namespace=namespace)
    described = await within(client.workflow_service.describe_namespace(request))
    assert described.namespace_info.name == namespace

    async def first_workflows() -> list:
        return [w async for w in client.list_workflows(limit=1)]

    assert isinstance(await within(first_workflows()), list)


async def test_the_frontends_ca_connects_and_the_client_works(env, pki, tls_env):
    async with tls_frontend(dev_server(env), pki) as frontend:
        point_at(tls_env, frontend, ca=pki.ca.cert)
        client = await within(connect())
        assert client.service_client.config.target_host == frontend.address
        assert client.service_client.config.tls.domain == SERVER_NAME
        await can_use(client, env.client.namespace)
        assert frontend.forwarded >= 1  # through TLS, not around it


@pytest.mark.parametrize(
    ("ca", "server_name", "reason"),
    [
        ("other_ca", SERVER_NAME, "InvalidCertificate(UnknownIssuer)"),
        ("ca", "someone-else.test", "InvalidCertificate(NotValidForName"),
    ],
    ids=["another-ca", "another-name"],
)
async def test_a_frontend_the_client_cannot_verify_is_refused(
    env, pki, tls_env, ca, server_name, reason
):
    async with tls_frontend(dev_server(env), pki) as frontend:
        point_at(tls_env, frontend, ca=getattr(pki, ca).cert)
        tls_env.setenv("TEMPORAL_TLS_SERVER_NAME", server_name)
        with pytest.raises(ConnectError) as caught:
            await within(connect())
        assert caught.value.message.startswith(f"cannot connect to Temporal at {frontend.address}")
        assert reason in caught.value.message
        assert frontend.forwarded == 0


async def test_mtls_refuses_a_client_without_a_certificate_and_admits_one_with(env, pki, tls_env):
    async with tls_frontend(dev_server(env), pki, require_client_cert=True) as frontend:
        point_at(tls_env, frontend, ca=pki.ca.cert)
        with pytest.raises(ConnectError, match=f"cannot connect to Temporal at {frontend.address}"):
            await within(connect())
        assert frontend.forwarded == 0  # refused in the handshake

        point_at(tls_env, frontend, ca=pki.ca.cert, client=pki.client)
        client = await within(connect())
        await can_use(client, env.client.namespace)
        assert frontend.forwarded >= 1


async def test_mtls_refuses_a_certificate_of_another_ca(env, pki, tls_env):
    async with tls_frontend(dev_server(env), pki, require_client_cert=True) as frontend:
        point_at(tls_env, frontend, ca=pki.ca.cert, client=pki.stranger)
        with pytest.raises(ConnectError):
            await within(connect())
        assert frontend.forwarded == 0


# --- the same variables in deploy/ ---------------------------------------------------


def commented_tls_settings(text: str) -> dict[str, str]:
    """The TEMPORAL_TLS* settings a manifest shows commented out, unquoted."""
    found = re.findall(r'^\s*# (TEMPORAL_TLS\w*): "?([^"\s]+)"?\s*$', text, re.M)
    return dict(found)


def connect_tls_config(settings: dict[str, str], root: str, files: dict[str, Path]):
    """The TLS config Temporal's client builds from `settings`, with the files under
    `root` read from `files` instead (by file name)."""
    env = {"TEMPORAL_ADDRESS": "frontend.test:7233"}
    for name, value in settings.items():
        env[name] = str(files[Path(value).name]) if value.startswith(root) else value
    profile = ClientConfigProfile.load(override_env_vars=env, disable_file=True)
    return profile.to_client_connect_config()["tls"]


def test_the_k8s_worker_mounts_the_tls_secret_where_the_configmap_points(pki):
    text = (DEPLOY / "k8s" / "configmap.yaml").read_text()
    settings = commented_tls_settings(text)
    root = "/etc/temporal/tls"
    files = {"ca.crt": pki.ca.cert, "tls.crt": pki.client.cert, "tls.key": pki.client.key}
    tls = connect_tls_config(settings, root, files)
    assert tls.server_root_ca_cert == pki.ca.cert.read_bytes()
    assert tls.client_cert == pki.client.cert.read_bytes()
    assert tls.client_private_key == pki.client.key.read_bytes()
    assert tls.domain == settings["TEMPORAL_TLS_SERVER_NAME"]
    worker = yaml.safe_load((DEPLOY / "k8s" / "worker-deployment.yaml").read_text())
    pod = worker["spec"]["template"]["spec"]
    [mount] = [m for m in pod["containers"][0]["volumeMounts"] if m["mountPath"] == root]
    [volume] = [v for v in pod["volumes"] if v["name"] == mount["name"]]
    # Optional: a worker without TLS starts with the Secret absent.
    assert volume["secret"]["optional"] is True and mount["readOnly"] is True


def test_the_compose_worker_shows_tls_through_secret_files(pki):
    text = (DEPLOY / "compose.yaml").read_text()
    settings = commented_tls_settings(text)
    names = {Path(v).name for k, v in settings.items() if k.endswith("_PATH")}
    assert names == {"temporal_tls_ca", "temporal_tls_cert", "temporal_tls_key"}
    files = {"temporal_tls_ca": pki.ca.cert, "temporal_tls_cert": pki.client.cert}
    files["temporal_tls_key"] = pki.client.key
    tls = connect_tls_config(settings, "/run/secrets", files)
    assert tls.server_root_ca_cert == pki.ca.cert.read_bytes() and tls.client_private_key
    for name in names:  # uncommented together: the worker's list and the file's source
        assert re.search(rf"^\s*# - {name}$", text, re.M), name
        assert re.search(rf"^  # {name}:\n  #   file: ./secrets/{name}\.pem$", text, re.M), name
