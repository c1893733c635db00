"""A qa benchmark's scoring page: the method and its normalisation steps, saved for future runs."""

from __future__ import annotations

from bs4 import BeautifulSoup

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


def test_numbers_are_fields_and_saving_the_page_unchanged_keeps_them(site: Site) -> None:
    """The page showed only switches: saving it reset a tolerance of 0.5 to 0."""
    bm = site.world.benchmark(site.ana_id, {**QA, "title": "Within a tolerance"})
    owner = Principal.web(site.ana_id)
    site.world.do(
        owner, scoring.set_scoring, bm, {"method": "numeric", "options": {"tolerance": 0.5}}
    )
    page = site.ana.page(f"/benchmarks/{bm}/settings/scoring")
    field = page.find("input", attrs={"name": "numeric.tolerance"})
    assert field is not None and field["type"] == "number" and float(field["value"]) == 0.5
    assert page.find("label", attrs={"for": "numeric-tolerance"}) is not None
    shown = {f["name"]: f["value"] for f in page.select('input[type="number"]')}
    saved = site.ana.post(f"/benchmarks/{bm}/settings/scoring", {"method": "numeric", **shown})
    assert saved.status_code == 303
    assert site.world.do(owner, scoring.get_scoring, bm)["options"]["tolerance"] == 0.5
    site.ana.post(f"/benchmarks/{bm}/settings/scoring", {"method": "f1", "f1.threshold": "0.3"})
    assert site.world.do(owner, scoring.get_scoring, bm)["options"]["threshold"] == 0.3
    wrong = site.ana.post(
        f"/benchmarks/{bm}/settings/scoring", {"method": "f1", "f1.threshold": "lots"}
    )
    assert wrong.status_code == 422 and "threshold" in wrong.text
    assert site.world.do(owner, scoring.get_scoring, bm)["options"]["threshold"] == 0.3


def test_a_bad_number_is_refused_beside_its_field_by_its_label(site: Site) -> None:
    bm = site.world.benchmark(site.ana_id, {**QA, "title": "Negative tolerance"})
    form = {"method": "numeric", "numeric.tolerance": "-1"}
    refused = site.ana.post(f"/benchmarks/{bm}/settings/scoring", form)
    assert refused.status_code == 422
    soup = BeautifulSoup(refused.text, "html.parser")
    field = soup.find("input", id="numeric-tolerance")
    assert field is not None and field["value"] == "-1.0" and field["aria-invalid"] == "true"
    error = soup.find("p", id="numeric-tolerance-error")
    assert error is not None and error.get_text() == "must be at least 0.0, got -1.0"
    assert "Tolerance: must be at least 0.0" in soup.select_one(".problems").get_text()  # type: ignore[union-attr]
    assert "options." not in refused.text
    assert site.world.do(Principal.web(site.ana_id), scoring.get_scoring, bm)["method"] == "exact"
