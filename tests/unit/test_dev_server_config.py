"""The dev server's settings: well-formed flags, and keys the server binary knows (it
ignores a key it does not know, silently)."""

from __future__ import annotations

from pathlib import Path

from durable_agents.dev_server_config import DEV_SERVER_CONFIG, dev_server_args
from durable_agents.worker import temporal_binary


def test_every_setting_is_one_dynamic_config_flag() -> None:
    args = dev_server_args()
    assert args[0::2] == ["--dynamic-config-value"] * len(DEV_SERVER_CONFIG)
    assert args[1::2] == [f"{k}={v}" for k, v in DEV_SERVER_CONFIG.items()]


def test_every_key_is_spelled_as_the_server_binary_spells_it() -> None:
    binary = Path(temporal_binary()).read_bytes()
    for key in DEV_SERVER_CONFIG:
        assert key.encode() in binary, key
    assert b"history.transferProcessorMaxPolRPS" not in binary  # the check can fail
