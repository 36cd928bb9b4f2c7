"""Secrets as `NAME` or `NAME_FILE` (dataplane.secret_env) and the three places that
read them: the worker's model key, the codec server's token, the snapshot key."""

from __future__ import annotations

import os
import re

import pytest
from durable_agents.client import codec_server, snapshots

from durable_agents.dataplane.codec import CodecConfigError
from durable_agents.dataplane.errors import DataPlaneError
from durable_agents.dataplane.secret_env import (
    MAX_FILE_BYTES,
    EnvSecret,
    SecretEnvError,
    secret_from_env,
)
from durable_agents.worker import WorkerSetupError, model_client

SECRET = "s3cret-value-0123456789"


def secret_file(tmp_path, content: str | bytes, name: str = "secret") -> str:
    path = tmp_path / name
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    return str(path)


def test_the_variable_itself_and_an_empty_variable_as_unset():
    assert secret_from_env("TOKEN", env={"TOKEN": SECRET}) == EnvSecret(SECRET, "TOKEN")
    assert secret_from_env("TOKEN", env={}) is None
    assert secret_from_env("TOKEN", env={"TOKEN": "", "TOKEN_FILE": " "}) is None


@pytest.mark.parametrize(
    ("content", "value"),
    [(SECRET, SECRET), (SECRET + "\n", SECRET), (SECRET + "\r\n", SECRET), ("a b\n\n", "a b\n")],
)
def test_a_file_loses_one_trailing_newline_and_nothing_else(tmp_path, content, value):
    path = secret_file(tmp_path, content)
    found = secret_from_env("TOKEN", env={"TOKEN_FILE": path})
    assert found == EnvSecret(value, f"TOKEN (file {path})")


def test_both_set_is_refused_without_showing_the_value(tmp_path):
    path = secret_file(tmp_path, SECRET)
    with pytest.raises(SecretEnvError, match=r"^set TOKEN or TOKEN_FILE, not both$") as caught:
        secret_from_env("TOKEN", env={"TOKEN": SECRET, "TOKEN_FILE": path})
    assert SECRET not in str(caught.value)
    assert isinstance(caught.value, DataPlaneError)


def test_a_missing_file_names_the_variable_and_the_path(tmp_path):
    missing = str(tmp_path / "nope")
    with pytest.raises(SecretEnvError) as caught:
        secret_from_env("TOKEN", env={"TOKEN_FILE": missing})
    assert caught.value.message == f"TOKEN_FILE: cannot read {missing}: No such file or directory"


def test_a_path_that_cannot_be_opened_is_refused(tmp_path):
    beneath_a_file = secret_file(tmp_path, SECRET) + "/key"
    with pytest.raises(SecretEnvError) as caught:
        secret_from_env("TOKEN", env={"TOKEN_FILE": beneath_a_file})
    assert caught.value.message == f"TOKEN_FILE: cannot read {beneath_a_file}: Not a directory"


@pytest.mark.parametrize("content", ["", "\n", "\r\n"])
def test_an_empty_file_is_refused_unless_the_secret_is_optional(tmp_path, content):
    path = secret_file(tmp_path, content)
    with pytest.raises(SecretEnvError, match=f"^TOKEN_FILE: {re.escape(path)} is empty$"):
        secret_from_env("TOKEN", env={"TOKEN_FILE": path})
    assert secret_from_env("TOKEN", env={"TOKEN_FILE": path}, empty_file_ok=True) is None


def test_a_directory_a_fifo_a_huge_file_and_binary_data_are_refused(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)  # reading it would block forever
    huge = secret_file(tmp_path, "x" * (MAX_FILE_BYTES + 1), "huge")
    binary = secret_file(tmp_path, b"\xff\xfe key", "binary")
    for path, problem in [
        (str(tmp_path), "is not a regular file"),
        (str(fifo), "is not a regular file"),
        (huge, f"is larger than {MAX_FILE_BYTES} bytes"),
        (binary, "is not UTF-8 text"),
    ]:
        with pytest.raises(SecretEnvError, match=f"^TOKEN_FILE: {re.escape(path)} {problem}$"):
            secret_from_env("TOKEN", env={"TOKEN_FILE": path})


# --- where they are read -------------------------------------------------------------


@pytest.fixture
def clean_env(monkeypatch):
    for name in (
        "OPENAI_API_KEY",
        "OPENAI_API_KEY_FILE",
        "AGENT_CODEC_SERVER_TOKEN",
        "AGENT_CODEC_SERVER_TOKEN_FILE",
        "AGENT_SNAPSHOT_KEY",
        "AGENT_SNAPSHOT_KEY_FILE",
    ):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


async def test_the_model_key_from_a_file_reaches_the_client(tmp_path, clean_env):
    clean_env.setenv("OPENAI_API_KEY_FILE", secret_file(tmp_path, "sk-from-file\n"))
    client, server = model_client(None)
    try:
        # The OpenAI client reads $OPENAI_API_KEY by itself, never the file.
        assert (client.api_key, server) == ("sk-from-file", None)
    finally:
        await client.close()


@pytest.mark.parametrize("placeholder", ["replace-me\n", "  CHANGEME  "])
def test_a_placeholder_in_the_model_key_file_is_refused(tmp_path, clean_env, placeholder):
    path = secret_file(tmp_path, placeholder)
    clean_env.setenv("OPENAI_API_KEY_FILE", path)
    with pytest.raises(WorkerSetupError) as caught:
        model_client("examples.support_agent:scripted_model")
    shown = placeholder.strip()
    assert str(caught.value) == (
        f"OPENAI_API_KEY (file {path}) is the placeholder {shown!r}: set the real key "
        "(the deploy/ templates ship placeholders on purpose)"
    )


def test_a_placeholder_in_the_variable_reads_as_before(clean_env):
    clean_env.setenv("OPENAI_API_KEY", "replace-me")
    with pytest.raises(WorkerSetupError) as caught:
        model_client(None)
    assert str(caught.value) == (
        "OPENAI_API_KEY is the placeholder 'replace-me': set the real key "
        "(the deploy/ templates ship placeholders on purpose)"
    )


def test_the_model_key_refuses_both_and_a_missing_file(tmp_path, clean_env):
    clean_env.setenv("OPENAI_API_KEY_FILE", str(tmp_path / "nope"))
    with pytest.raises(WorkerSetupError, match=r"^OPENAI_API_KEY_FILE: cannot read "):
        model_client(None)
    clean_env.setenv("OPENAI_API_KEY", "sk-inline")
    with pytest.raises(WorkerSetupError, match=r"^set OPENAI_API_KEY or OPENAI_API_KEY_FILE"):
        model_client(None)


def test_an_empty_model_key_file_means_no_key(tmp_path, clean_env):
    # compose mounts the file either way; empty = the offline scripted model, or this.
    clean_env.setenv("OPENAI_API_KEY_FILE", secret_file(tmp_path, ""))
    with pytest.raises(WorkerSetupError, match=r"^OPENAI_API_KEY is not set"):
        model_client(None)


def test_codec_server_tokens_from_a_file(tmp_path, clean_env):
    token = "t" * 24
    clean_env.setenv("AGENT_CODEC_SERVER_TOKEN_FILE", secret_file(tmp_path, f"{token},{SECRET}\n"))
    assert codec_server.config_from_env().tokens == (token, SECRET)
    clean_env.setenv("AGENT_CODEC_SERVER_TOKEN", token)
    with pytest.raises(CodecConfigError, match="not both"):
        codec_server.config_from_env()


def test_snapshot_key_from_a_file_and_never_unsigned_by_accident(tmp_path, clean_env):
    clean_env.setenv("AGENT_SNAPSHOT_KEY_FILE", secret_file(tmp_path, "snap-key\n"))
    assert snapshots.signing_key() == b"snap-key"
    clean_env.setenv("AGENT_SNAPSHOT_KEY_FILE", secret_file(tmp_path, "", "empty"))
    with pytest.raises(SecretEnvError, match="is empty"):
        snapshots.signing_key()
    assert snapshots.signing_key(b"given") == b"given"
