"""Release 1.0 is consistent wherever it is named: the package's version, the changelog,
the folder of recorded histories CI replays, and the image tags the deploy files run."""

from __future__ import annotations

import re

from tests.support.histories import HISTORIES, RELEASE, built_release
from tests.support.packaging import ROOT, VERSION

DEPLOYED = (
    "deploy/k8s/worker-deployment.yaml",
    "deploy/k8s/codec-server.yaml",
    "deploy/compose.yaml",
    "deploy/Dockerfile",
    "deploy/README.md",
    "docs/tutorial/deploy.md",
)


def test_the_version_is_a_release_with_its_changelog_entry_and_histories():
    assert re.fullmatch(r"\d+\.\d+\.\d+", VERSION), VERSION
    assert built_release() == RELEASE
    changelog = (ROOT / "CHANGELOG.md").read_text()
    assert re.search(rf"^## {re.escape(VERSION)} — \d{{4}}-\d{{2}}-\d{{2}}$", changelog, re.M)
    assert len(list(HISTORIES.glob("*.json"))) >= 12


def test_every_image_tag_the_deploy_files_name_is_this_version():
    for name in DEPLOYED:
        text = (ROOT / name).read_text()
        tags = re.findall(r"durable-agents:(?:\$\{AGENT_IMAGE_TAG:-)?(\d[\w.]*)", text)
        assert tags, name
        assert set(tags) == {VERSION}, (name, tags)
