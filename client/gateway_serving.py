"""How `agentctl serve` serves the gateway: uvicorn's settings, TLS included.

Browsers give WebCrypto (the inbox's signatures) only to secure pages, so the gateway
can serve TLS itself (`--tls-cert FILE --tls-key FILE`, PEM; uvicorn's own TLS) as well
as sit behind a TLS proxy. With a trusted proxy identity (`client.proxy_identity`),
uvicorn's `X-Forwarded-For` rewriting is off: the address a header is believed from is
the connection's.
"""

from __future__ import annotations

import ssl
from pathlib import Path
from typing import Any

import uvicorn


class ServingConfigError(ValueError):
    """The serving options cannot be used: the message names the option."""


def tls_files(cert: str | None, key: str | None) -> tuple[Path, Path] | None:
    """The certificate and key files, checked (both or neither; readable PEM that
    belong together); None without TLS."""
    if cert is None and key is None:
        return None
    if cert is None or key is None:
        raise ServingConfigError("--tls-cert and --tls-key go together")
    paths = Path(cert), Path(key)
    for option, path in zip(("--tls-cert", "--tls-key"), paths, strict=True):
        if not path.is_file():
            raise ServingConfigError(f"{option}: {path} is not a file")
    try:
        ssl.create_default_context(ssl.Purpose.CLIENT_AUTH).load_cert_chain(*paths)
    except (ssl.SSLError, OSError, ValueError) as err:
        raise ServingConfigError(
            f"--tls-cert / --tls-key: not a PEM certificate and its key ({err})"
        ) from None
    return paths


def config(
    app: Any,
    *,
    host: str,
    port: int,
    tls: tuple[Path, Path] | None = None,
    behind_trusted_proxy: bool = False,
) -> uvicorn.Config:
    """uvicorn's settings for the gateway `app`."""
    extra: dict[str, Any] = {}
    if tls is not None:
        extra |= {"ssl_certfile": str(tls[0]), "ssl_keyfile": str(tls[1])}
    if behind_trusted_proxy:
        extra["proxy_headers"] = False
    return uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level="warning",
        lifespan="off",
        **extra,
    )
