"""The same new bundle sent twice at once becomes one version: the second upload, which read
the versions before the first was stored, is refused once it holds the benchmark."""

from __future__ import annotations

import hashlib
from types import SimpleNamespace
from typing import Any

import pytest

from benchgen.core.context import Principal
from benchgen.core.errors import Conflict
from benchgen.services.benchmarks import _bundle_versions, bundles
from tests.bundle_factory import bundle, competition, require_sandbox
from tests.support import World

pytestmark = pytest.mark.both_backends  # the race it stands for is PostgreSQL's


def test_a_second_identical_upload_is_refused_under_the_lock(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    require_sandbox()
    ana = world.user("ana@example.com")
    first = bundle()
    created = world.do(Principal.web(ana), bundles.upload_bundle, first, "v1.zip")
    bm = created.benchmark.id
    second = bundle(competition(title="Tiny custom v2"))
    pending = world.do(Principal.web(ana), bundles.check_bundle, second, "v2.zip", bm)
    checked = pending.inspect()
    world.do(Principal.web(ana), bundles.upload_bundle_version, bm, second, "v2.zip", checked)
    # The other request's first look, made before version 2 was committed, saw version 1.
    stale = SimpleNamespace(version=1, sha256=hashlib.sha256(first).hexdigest())
    real = _bundle_versions.latest_version
    looks: list[int] = []

    def latest(*args: Any) -> Any:
        looks.append(1)
        return stale if len(looks) == 1 else real(*args)

    monkeypatch.setattr(_bundle_versions, "latest_version", latest)
    with pytest.raises(Conflict, match="identical to version 2"):
        world.do(Principal.web(ana), bundles.upload_bundle_version, bm, second, "v2.zip", checked)
    monkeypatch.undo()
    assert world.do(Principal.web(ana), bundles.get_bundle, bm).version == 2
