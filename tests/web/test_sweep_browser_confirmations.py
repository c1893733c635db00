"""Typed confirmations are checked on the server as the page shows the name: words, not spaces."""

from __future__ import annotations

from tests.support import QA
from tests.web.benchmark_site import Site, site

__all__ = ["site"]  # the module-scoped fixture, shared by the tests below


def test_a_title_with_two_spaces_in_a_row_is_deleted_when_typed_as_shown(site: Site) -> None:
    """The page shows "Two  spaces  here" as "Two spaces here": typing that was refused."""
    bm = site.world.benchmark(site.ana_id, {**QA, "title": "Two  spaces  here"})
    delete = f"/benchmarks/{bm}/settings/delete"
    assert site.ana.post(delete, {"confirm": "Two spaces"}).status_code == 422
    assert site.ana.post(delete, {"confirm": "two spaces here"}).status_code == 422
    assert site.ana.post(delete, {"confirm": " Two spaces here "}).status_code == 303
    assert site.ana.get(f"/benchmarks/{bm}").status_code == 404
