"""The README's screenshots: the main pages of a seeded BenchGen at 1280×800, in docs/screenshots.

Not a test (pytest does not collect it). Run it from the repository root when pages change:

    .venv/bin/python -m tests.e2e.screenshots
    .venv/bin/python -m tests.e2e.screenshots --out /tmp/shots

It serves a fresh SQLite database in a temporary directory, seeds it through the services (a
person, two benchmarks, two finished runs of built-in models on the leaderboard), then drives
Debian's Chromium through the pages as that person would.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path
from typing import Any

from playwright.sync_api import Locator, Page, expect, sync_playwright

from benchgen.core.context import Principal
from benchgen.services.accounts import credits, users
from benchgen.services.runs import launch, leaderboards
from tests.e2e.support import (
    CHROMIUM,
    FIRST_CHOICE_ID,
    LAUNCH_ARGS,
    PASSWORD,
    VIEWPORT,
    Site,
    say,
    served_site,
    sign_in,
    start_conversation,
)
from tests.support import OPERATOR, QA

OUT = Path("docs/screenshots")
EMAIL = "ana@example.com"
RANDOM_ID = "mdl_builtin_random"
CAPITALS = [
    ("Capital of France?", ["Lyon", "Paris", "Nice"], "B", "europe"),
    ("Capital of Italy?", ["Rome", "Milan", "Turin"], "A", "europe"),
    ("Capital of Spain?", ["Seville", "Valencia", "Madrid"], "C", "europe"),
    ("Capital of Portugal?", ["Lisbon", "Porto"], "A", "europe"),
    ("Capital of Japan?", ["Osaka", "Tokyo", "Kyoto"], "B", "asia"),
    ("Capital of India?", ["New Delhi", "Mumbai"], "A", "asia"),
    ("Capital of Thailand?", ["Bangkok", "Phuket", "Chiang Mai"], "A", "asia"),
    ("Capital of Canada?", ["Toronto", "Ottawa", "Montreal"], "B", "americas"),
    ("Capital of Brazil?", ["Brasília", "Rio de Janeiro", "São Paulo"], "A", "americas"),
    ("Capital of Peru?", ["Cusco", "Lima"], "B", "americas"),
]
WORLD_CAPITALS: dict[str, Any] = {
    "title": "World capitals",
    "description": "Ten capitals, three continents, multiple choice.",
    "format": "mcq",
    "questions": [
        {"prompt": prompt, "choices": choices, "answer": answer, "tags": [tag]}
        for prompt, choices, answer, tag in CAPITALS
    ],
}
PLANETS = 'create a benchmark called "Planets"\n1. Largest planet?\na) Mars\nb) Jupiter\nAnswer: b'


def seed(site: Site) -> tuple[str, str]:
    """Ana, her benchmarks and two ranked runs: (World capitals' id, the first-choice run's id)."""
    made = site.world.do(OPERATOR, users.create_user, EMAIL, PASSWORD, "Ana")
    site.world.do(OPERATOR, credits.grant_credits, made.id, 1000)
    ana = Principal.web(made.id)
    site.world.benchmark(made.id, QA)
    capitals = site.world.benchmark(made.id, WORLD_CAPITALS)
    runs = [site.world.do(ana, launch.start_run, capitals, m) for m in (FIRST_CHOICE_ID, RANDOM_ID)]
    site.drain_jobs()
    for run in runs:
        site.world.do(ana, leaderboards.add_to_leaderboard, run.id)
    return capitals, runs[0].id


def shoot(page: Page, out: Path, name: str) -> None:
    """Save the viewport once charts have finished drawing."""
    # Chart.js animates for a second after drawing; a still picture wants the end of it.
    page.wait_for_timeout(1200)
    page.screenshot(path=str(out / f"{name}.png"))
    print(out / f"{name}.png")


def scroll_to(part: Locator, end: bool = False) -> None:
    """Scroll the page so that `part` starts near the top of the window (or, with `end`, ends
    near its bottom)."""
    script = """(el, end) => {
      const box = el.getBoundingClientRect();
      const y = end ? box.bottom - window.innerHeight + 24 : box.top - 16;
      window.scrollTo(0, y + window.scrollY);
    }"""
    part.evaluate(script, end)


def tour(page: Page, out: Path, benchmark_id: str, run_id: str) -> None:
    """Visit each main page and photograph it."""
    sign_in(page, EMAIL)
    shoot(page, out, "dashboard")
    page.goto(f"/benchmarks/{benchmark_id}")
    shoot(page, out, "benchmark")
    page.goto(f"/runs/{run_id}")
    scroll_to(page.get_by_role("region", name="Progress"))
    shoot(page, out, "run")
    page.goto(f"/benchmarks/{benchmark_id}/leaderboard")
    shoot(page, out, "leaderboard")
    start_conversation(page)
    say(page, PLANETS)
    card = page.get_by_role("region", name="Proposal: Create a benchmark")
    expect(card).to_be_visible()
    scroll_to(card, end=True)
    shoot(page, out, "chat")
    page.goto("/settings/tokens")
    page.get_by_label("Name").fill("laptop scripts")
    page.get_by_role("button", name="Create the token").click()
    shoot(page, out, "tokens")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT, help=f"where the PNGs go ({OUT})")
    out: Path = parser.parse_args().out
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as temp, served_site(Path(temp) / "data") as site:
        benchmark_id, run_id = seed(site)
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(
                executable_path=str(CHROMIUM), headless=True, args=LAUNCH_ARGS
            )
            context = browser.new_context(base_url=site.url, viewport=VIEWPORT)
            tour(context.new_page(), out, benchmark_id, run_id)
            browser.close()


if __name__ == "__main__":
    main()
