"""The owner's mail page says how its messages are delivered, as this deployment does it."""

from __future__ import annotations

import pytest

from benchgen.core.context import Principal
from benchgen.services.benchmarks import lifecycle, members
from tests.support import QA
from tests.web.benchmark_site import Site, site

__all__ = ["site"]  # the module-scoped fixture, shared by the tests below


def _hint(site: Site, bm: str) -> str:
    return " ".join(site.ana.get(f"/benchmarks/{bm}/participants/email").text.split())


def test_the_page_tells_the_truth_about_delivery(
    site: Site, monkeypatch: pytest.MonkeyPatch
) -> None:
    bm = site.world.benchmark(site.ana_id, {**QA, "title": "Mailed"})
    site.world.do(Principal.web(site.ana_id), lifecycle.publish_benchmark, bm)
    site.world.do(Principal.web(site.cy_id), members.join_benchmark, bm, True)
    message = {"subject": "News", "body": "Hello", "statuses": "active", "step": "send"}
    message["recipients"] = "cy@example.com"
    site.ana.post(f"/benchmarks/{bm}/participants/email", message)
    without = _hint(site, bm)
    assert "no mail server configured: messages stay queued in its outbox" in without
    assert "tried again" not in without
    monkeypatch.setattr(site.runtime.settings, "smtp_url", "smtp://127.0.0.1:1")
    with_smtp = _hint(site, bm)
    assert "go out through the deployment's mail server" in with_smtp
    assert "tried again every few minutes for two days" in with_smtp
    assert "no mail server configured" not in with_smtp
