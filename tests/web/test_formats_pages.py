"""Formats in the web app: the import page's upload with file type, preset and mapping, its
problems by row in place (422, nothing created), and export downloads for the team only."""

from __future__ import annotations

import io
import json
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager

import pyarrow as pa
import pyarrow.parquet as pq
from bs4 import BeautifulSoup
from fastapi.testclient import TestClient

from benchgen.app import create_app
from benchgen.core.context import Principal
from benchgen.services.benchmarks import lifecycle
from benchgen.services.runtime import Runtime
from tests.support import MCQ, World
from tests.web.support import WebUser

PAGE = "/benchmarks/import"


@contextmanager
def browser(runtime: Runtime, email: str) -> Iterator[WebUser]:
    """`email` signed in, in a browser of their own."""
    with TestClient(create_app(runtime.settings, runtime), follow_redirects=False) as client:
        yield WebUser.sign_in(client, email)


def upload(person: WebUser, name: str, data: bytes, **fields: str) -> tuple[int, BeautifulSoup]:
    form = {"csrf_token": person.csrf, "title": "Imported", **fields}
    response = person.client.post(PAGE, data=form, files={"file": (name, data, "text/plain")})
    return response.status_code, BeautifulSoup(response.text, "html.parser")


def mine(world: World, user_id: str) -> list[str]:
    found = world.do(Principal.web(user_id), lifecycle.list_benchmarks, True)
    return [benchmark.title for benchmark in found]


def test_the_form_offers_file_types_presets_and_a_mapping(runtime: Runtime, world: World) -> None:
    world.user("ana@example.com")
    with browser(runtime, "ana@example.com") as ana:
        page = ana.page(PAGE)
    options = {option["value"] for option in page.select("#file_format option")}
    assert options == {"auto", "jsonl", "csv", "parquet", "hf"}
    assert {option["value"] for option in page.select("#preset option")} == {
        "none",
        "inspect",
        "lm_eval_mcq",
    }
    for name in ("map_prompt", "map_answer", "map_choices", "map_tags", "map_answer_is"):
        assert page.find(attrs={"name": name}) is not None, name
    assert page.find("input", attrs={"type": "file", "name": "file"}) is not None


def test_an_inspect_file_and_a_mapped_parquet_file_are_imported(
    runtime: Runtime, world: World
) -> None:
    ana_id = world.user("ana@example.com")
    samples = b'{"input": "Capital of France?", "target": "Paris", "id": "s1"}\n'
    rows = [{"question": "Sky?", "opts": ["Green", "Blue"], "key": "b", "topic": "nature"}]
    sink = io.BytesIO()
    pq.write_table(pa.Table.from_pylist(rows), sink)
    with browser(runtime, "ana@example.com") as ana:
        status, _ = upload(ana, "samples.jsonl", samples, preset="inspect")
        assert status == 303
        mapping = {
            "map_prompt": "question",
            "map_choices": "opts",
            "map_answer": "key",
            "map_answer_is": "letter",
            "map_tags": "topic",
        }
        form = {"csrf_token": ana.csrf, "title": "Sky", "file_format": "parquet", **mapping}
        made = ana.client.post(
            PAGE, data=form, files={"file": ("sky.parquet", sink.getvalue(), "text/plain")}
        )
        assert made.status_code == 303, made.text
        questions = ana.page(made.headers["location"] + "/questions").get_text()
        assert "Sky?" in questions and "nature" in questions
    assert sorted(mine(world, ana_id)) == ["Imported", "Sky"]


def test_bad_rows_are_shown_in_place_with_their_numbers_and_nothing_is_created(
    runtime: Runtime, world: World
) -> None:
    ana_id = world.user("ana@example.com")
    rows = [
        {"question": "ok?", "choices": ["a", "b"], "answer": 0},
        {"question": "bad?", "choices": ["a", "b"], "answer": 5},
        {"choices": ["a", "b"], "answer": 1},
    ]
    data = "\n".join(json.dumps(row) for row in rows).encode()
    table = io.BytesIO()
    pq.write_table(pa.Table.from_pylist([{"input": None, "target": "x"}]), table)
    with browser(runtime, "ana@example.com") as ana:
        status, page = upload(ana, "x.jsonl", data, preset="lm_eval_mcq", map_tags="topic")
        assert status == 422
        summary = page.select_one(".problems")
        assert summary is not None
        assert "Line 2, answer: index '5'" in summary.get_text()
        assert "Line 3, prompt" in summary.get_text()
        in_place = page.select_one("#file-error")
        assert in_place is not None and "index '5'" in in_place.get_text()
        # What was chosen stays chosen.
        chosen = page.select_one("#preset option[selected]")
        assert chosen is not None and chosen["value"] == "lm_eval_mcq"
        assert page.find("input", id="map_tags")["value"] == "topic"  # type: ignore[index]
        status, page = upload(ana, "x.parquet", table.getvalue(), preset="inspect")
        assert status == 422 and "Row 1, prompt" in page.get_text()
        status, page = upload(ana, "x.jsonl", b"")
        assert status == 422 and "choose a file" in page.get_text()
    assert mine(world, ana_id) == []


def test_the_team_downloads_exports_and_a_stranger_is_refused(
    runtime: Runtime, world: World
) -> None:
    ana_id = world.user("ana@example.com")
    world.user("bob@example.com")
    world.user("cy@example.com")
    bm = world.benchmark(ana_id, MCQ)
    world.collaborator(ana_id, bm, "bob@example.com")
    for email in ("ana@example.com", "bob@example.com"):
        with browser(runtime, email) as person:
            overview = person.page(f"/benchmarks/{bm}")
            links = [a["href"] for a in overview.select("#export-title ~ ul a")]
            assert links == [
                f"/benchmarks/{bm}/export/{fmt}" for fmt in ("jsonl", "inspect", "lm_eval")
            ]
            for link in links:
                got = person.get(link)
                assert got.status_code == 200, (link, got.text[:300])
                assert got.headers["x-content-type-options"] == "nosniff"
                assert got.headers["content-disposition"].startswith("attachment;")
            folder = person.get(links[1]).content
            with zipfile.ZipFile(io.BytesIO(folder)) as archive:
                assert any(name.endswith("/task.py") for name in archive.namelist())
    with browser(runtime, "cy@example.com") as cy:
        assert cy.get(f"/benchmarks/{bm}/export/jsonl").status_code == 404
        world.do(Principal.web(ana_id), lifecycle.publish_benchmark, bm)
        refused = cy.get(f"/benchmarks/{bm}/export/jsonl")
        assert refused.status_code == 403
        assert "text/html" in refused.headers["content-type"]
        assert "Paris" not in refused.text and '"answer"' not in refused.text
        overview = cy.page(f"/benchmarks/{bm}")
        assert overview.find(id="export-title") is None
