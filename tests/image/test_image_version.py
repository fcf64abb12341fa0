"""The image says which release and which commit it is, as the rest of the release does: its
``org.opencontainers.image.version`` label and tag are pyproject.toml's version, its ``revision``
label the commit it was built from, and ``kustodian version`` inside it says the same (the
package's COMMIT, recorded from the build argument: the build context holds no .git)."""

from __future__ import annotations

import json

from kustodian.testing import image as image_build
from kustodian.version import git_commit
from release.version import REPO, project_version
from tests.image.conftest import podman


def test_the_labels_and_kustodian_version_name_the_release_and_the_commit(built_image: str) -> None:
    version, commit = project_version(), git_commit(REPO)
    labels = image_build.labels(built_image)
    assert labels["org.opencontainers.image.version"] == version
    assert labels["org.opencontainers.image.revision"] == (commit or "")
    assert labels["org.opencontainers.image.source"] == "https://github.com/kustodian/kustodian"
    assert image_build.image_exists(f"localhost/kustodian:{version}")  # tagged with the version too
    out = podman("run", "--rm", "--network=none", built_image, "version", "-o", "json")
    info = json.loads(out.stdout)
    assert (info["version"], info["commit"]) == (version, commit)
