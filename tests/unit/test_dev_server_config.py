"""The dev server's settings: well-formed flags, and keys the server binary knows (it
ignores a key it does not know, silently)."""

from __future__ import annotations

import mmap
from pathlib import Path

from durable_agents.dev_server_config import DEV_SERVER_CONFIG, dev_server_args
from durable_agents.worker import temporal_binary


def test_every_setting_is_one_dynamic_config_flag() -> None:
    args = dev_server_args()
    assert args[0::2] == ["--dynamic-config-value"] * len(DEV_SERVER_CONFIG)
    assert args[1::2] == [f"{k}={v}" for k, v in DEV_SERVER_CONFIG.items()]


def test_every_key_is_spelled_as_the_server_binary_spells_it() -> None:
    with (
        Path(temporal_binary()).open("rb") as file,
        mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) as binary,
    ):  # 150 MB: mapped, not read into this worker's memory
        for key in DEV_SERVER_CONFIG:
            assert binary.find(key.encode()) >= 0, key
        assert binary.find(b"history.transferProcessorMaxPolRPS") < 0  # the check can fail
