"""Connect to Temporal the standard way: environment configuration, then explicit overrides."""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from durable_agents.client.errors import AgentClientError, ConnectError
from temporalio.client import Client
from temporalio.converter import DataConverter
from temporalio.envconfig import ClientConfigProfile
from temporalio.runtime import Runtime

from durable_agents.dataplane.codec import data_converter_from_env

DEFAULT_ADDRESS = "localhost:7233"
DEFAULT_NAMESPACE = "default"


async def connect(
    *,
    profile: str | None = None,
    address: str | None = None,
    namespace: str | None = None,
    runtime: Runtime | None = None,
    data_converter: DataConverter | None = None,
) -> Client:
    """A client for the Temporal server, with the pydantic data converter.

    Settings come from Temporal's environment configuration (TOML profiles,
    `TEMPORAL_ADDRESS`, `TEMPORAL_NAMESPACE`, `TEMPORAL_API_KEY`, TLS); an explicit
    `address` or `namespace` overrides them. Defaults: `localhost:7233`, `default`.
    An empty API key counts as none (see `_connect_config`).
    `runtime` defaults to the SDK's process-wide one. `data_converter` defaults
    to the one worker.py uses too, `client.codec.data_converter_from_env`: pydantic
    JSON, the payload codec (AGENT_CODEC_KEYS...; encryption off without keys)
    and the payload store (AGENT_PAYLOAD_STORE...).
    Raises `ConnectError` (an `AgentClientError`) naming the address on failure,
    `CodecConfigError` or `PayloadStoreError` (also ones) for an unusable configuration.
    """
    config = _connect_config(profile, address=address, namespace=namespace)
    config["data_converter"] = data_converter or data_converter_from_env()
    if runtime is not None:
        config["runtime"] = runtime
    try:
        return await Client.connect(**config)
    except Exception as err:  # the SDK reports a refused connection as RuntimeError
        raise ConnectError(config["target_host"], config["namespace"], _reason(err)) from err


def _connect_config(
    profile: str | None, *, address: str | None, namespace: str | None
) -> dict[str, Any]:
    """Connect arguments from the profile and environment, then the overrides.

    An empty API key (`TEMPORAL_API_KEY=""`, as a Kubernetes Secret or compose
    file with an unset value injects) is dropped: `temporalio.envconfig` would
    otherwise send it and turn TLS on by itself, so that a worker could not
    reach a plain self-hosted cluster. TLS set explicitly (`TEMPORAL_TLS*`, the
    profile's `tls`) still applies.
    """
    try:
        loaded = ClientConfigProfile.load(profile=profile)
    except Exception as err:  # bad TOML, unknown profile: the bridge raises RuntimeError
        what = f"profile {profile!r}" if profile else "configuration"
        raise AgentClientError(f"cannot load the Temporal {what}: {_reason(err)}") from err
    if loaded.api_key is not None and not loaded.api_key.strip():
        loaded = dataclasses.replace(loaded, api_key=None)
    config: dict[str, Any] = dict(loaded.to_client_connect_config())
    config["target_host"] = address or config.get("target_host") or DEFAULT_ADDRESS
    config["namespace"] = namespace or config.get("namespace") or DEFAULT_NAMESPACE
    return config


def _reason(err: BaseException) -> str:
    """The SDK's message on one line, without its prefix and transport noise."""
    text = " ".join(str(err).split()) or type(err).__name__
    os_message = re.search(r'(?:message|error): "([^"]+)"', text)  # e.g. "Connection refused"
    return os_message.group(1) if os_message else text.removeprefix("Failed client connect: ")
