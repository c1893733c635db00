"""A qa benchmark's scoring page: the method and its normalisation steps, saved for future runs."""

from __future__ import annotations

from benchgen.core.context import Principal
from benchgen.services.benchmarks import scoring
from tests.support import QA
from tests.web.benchmark_site import Site, site

__all__ = ["site"]


def test_the_owner_switches_to_includes_with_number_words(site: Site) -> None:
    bm = site.world.benchmark(site.ana_id, {**QA, "title": "Scored by words"})
    page = site.ana.page(f"/benchmarks/{bm}/settings/scoring")
    assert page.find("input", attrs={"name": "method", "value": "includes"}) is not None
    saved = site.ana.post(
        f"/benchmarks/{bm}/settings/scoring",
        {"method": "includes", "includes.case": "on", "includes.number_words": "on"},
    )
    assert saved.status_code == 303
    now = site.world.do(Principal.web(site.ana_id), scoring.get_scoring, bm)
    assert now["method"] == "includes"
    assert now["options"]["number_words"] and now["options"]["case"]
    assert not now["options"]["punctuation"]  # an unticked box is off


def test_an_unknown_method_is_refused_with_the_page_kept(site: Site) -> None:
    bm = site.world.benchmark(site.ana_id, {**QA, "title": "Kept"})
    refused = site.ana.post(f"/benchmarks/{bm}/settings/scoring", {"method": "vibes"})
    assert refused.status_code == 422
    assert "unknown scoring method" in refused.text
    assert site.world.do(Principal.web(site.ana_id), scoring.get_scoring, bm)["method"] == "exact"
