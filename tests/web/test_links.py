"""Page paths in agent replies become links; nothing else does, and everything stays escaped."""

from __future__ import annotations

from benchgen.web.links import link_paths


def test_our_page_paths_become_links() -> None:
    html = str(link_paths("Do it at /benchmarks/bm_Ab-1/settings. Thanks"))
    link = '<a href="/benchmarks/bm_Ab-1/settings">/benchmarks/bm_Ab-1/settings</a>'
    assert html == f"Do it at {link}. Thanks"


def test_absolute_links_under_the_public_url() -> None:
    html = str(
        link_paths("see https://bench.example.org/settings/tokens", "https://bench.example.org/")
    )
    assert '<a href="/settings/tokens">https://bench.example.org/settings/tokens</a>' in html


def test_other_hosts_and_schemes_stay_text() -> None:
    for text in (
        "https://evil.example/settings/tokens",
        "javascript:/settings/tokens",
        "//evil.example/runs/x",
        "/etc/passwd",
    ):
        assert "<a " not in str(link_paths(text, "https://bench.example.org")), text


def test_everything_else_is_escaped() -> None:
    html = str(link_paths('<script>alert(1)</script> "><img src=x onerror=alert(1)> /runs/r_1'))
    assert "<script>" not in html and "<img" not in html
    assert "&lt;script&gt;" in html and '<a href="/runs/r_1">' in html
