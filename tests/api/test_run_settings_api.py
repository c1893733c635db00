"""Run settings through the HTTP API: the estimate with settings, a start carrying them, a
provider's refusal as 422, the spending cap as 409, and retrying errors as a linked run."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from benchgen.core.permissions import Scope
from benchgen.jobs.worker import Worker
from benchgen.services import models
from benchgen.services.runtime import Runtime
from tests.evals.stub_openai import Fault, StubOpenAI
from tests.services.test_judge import stub_model
from tests.support import OPERATOR, World

# Model endpoints on 127.0.0.1 (the stubs) are allowed, as an operator's allow-list would.
pytestmark = pytest.mark.usefixtures("local_models")

FIRST = "mdl_builtin_first"
RANDOM = "mdl_builtin_random"
ALL_SCOPES = sorted(scope.value for scope in Scope)
TWELVE = {
    "title": "Twelve",
    "format": "mcq",
    "questions": [
        {
            "prompt": f"Question {i}: pick one",
            "choices": [f"a{i}", f"b{i}", f"c{i}"],
            "answer": "A",
            "tags": ["even" if i % 2 == 0 else "odd"],
        }
        for i in range(12)
    ],
}


@pytest.fixture
def setup(world: World) -> tuple[dict[str, str], str]:
    ana = world.user("ana@example.com", credits_=100)
    auth = {"Authorization": f"Bearer {world.token(ana, ALL_SCOPES)}"}
    return auth, world.benchmark(ana, TWELVE)


def _failing_on_question_4() -> StubOpenAI:
    return StubOpenAI(
        fail=lambda n, prompt: Fault.server_error() if "Question 4:" in prompt else None
    )


def drain(runtime: Runtime) -> None:
    worker = Worker(runtime)
    while worker.run_once():
        pass


def test_estimate_and_start_carry_settings_and_subsets(
    client: TestClient, runtime: Runtime, setup: tuple[dict[str, str], str]
) -> None:
    auth, bm = setup
    body = {
        "benchmark_id": bm,
        "model_id": RANDOM,
        "settings": {"samples": 3, "seed": 5},
        "subset": {"kind": "tags", "tags": ["odd"]},
    }
    estimate = client.post("/api/v1/runs/estimate", json=body, headers=auth)
    assert estimate.status_code == 200, estimate.text
    shown = estimate.json()
    assert shown["question_count"] == 6 and shown["partial"] is True
    assert "3 samples per question" in shown["settings"]
    started = client.post("/api/v1/runs", json=body, headers=auth)
    assert started.status_code == 202, started.text
    run = started.json()
    assert run["partial"] is True and run["settings"]["samples"] == 3
    drain(runtime)
    done = client.get(f"/api/v1/runs/{run['id']}", headers=auth).json()
    assert done["status"] == "completed" and done["summary"]["sampling"]["samples"] == 3


def test_unsupported_or_out_of_range_settings_are_422(
    client: TestClient, setup: tuple[dict[str, str], str]
) -> None:
    auth, bm = setup
    refused = client.post(
        "/api/v1/runs/estimate",
        json={"benchmark_id": bm, "model_id": FIRST, "settings": {"top_p": 0.5}},
        headers=auth,
    )
    assert refused.status_code == 422
    assert refused.json()["error"]["details"]["errors"][0]["loc"][-2:] == ["settings", "top_p"]
    out_of_range = client.post(
        "/api/v1/runs",
        json={"benchmark_id": bm, "model_id": FIRST, "settings": {"temperature": 3}},
        headers=auth,
    )
    assert out_of_range.status_code == 422


@pytest.mark.parametrize("number", ["NaN", "Infinity"])
@pytest.mark.parametrize("field", ["temperature", "top_p"])
def test_a_sampling_setting_that_is_no_number_says_so(
    client: TestClient, setup: tuple[dict[str, str], str], field: str, number: str
) -> None:
    """Python's JSON reads NaN: it was refused as above the bound, as if it were a number."""
    auth, bm = setup
    body = f'{{"benchmark_id": "{bm}", "model_id": "{FIRST}", "settings": {{"{field}": {number}}}}}'
    headers = {**auth, "Content-Type": "application/json"}
    refused = client.post("/api/v1/runs", content=body, headers=headers)
    assert refused.status_code == 422
    [problem] = refused.json()["error"]["details"]["errors"]
    assert problem["loc"] == ["body", "settings", field]
    assert "finite" in problem["msg"] or "NaN" in problem["msg"], problem


def test_the_spending_cap_refuses_a_dearer_run(
    client: TestClient, world: World, setup: tuple[dict[str, str], str]
) -> None:
    auth, bm = setup
    with StubOpenAI() as stub:
        spec = {
            "name": "Priced",
            "kind": "openai_compat",
            "endpoint_model": "stub",
            "base_url": stub.base_url,
            "price_per_question": 2,
            "params": {"max_tokens": 16},
        }
        model = world.do(OPERATOR, models.create_platform_model, spec).id
        body = {"benchmark_id": bm, "model_id": model, "max_credits": 5}
        previewed = client.post("/api/v1/runs/estimate", json=body, headers=auth)
        capped = client.post("/api/v1/runs", json=body, headers=auth)
    for refused in (previewed, capped):
        assert refused.status_code == 409, refused.text
        assert "above your cap of 5" in refused.json()["error"]["message"]


def test_the_estimate_refuses_an_unknown_phase_as_the_start_does(
    client: TestClient, setup: tuple[dict[str, str], str]
) -> None:
    auth, bm = setup
    body = {"benchmark_id": bm, "model_id": FIRST, "phase_id": "ph_bogus"}
    answers = [
        client.post("/api/v1/runs/estimate", json=body, headers=auth),
        client.get("/api/v1/runs/estimate", params=body, headers=auth),
        client.post("/api/v1/runs", json=body, headers=auth),
    ]
    for answer in answers:
        assert answer.status_code == 404, answer.text
        assert answer.json()["error"]["message"] == "No such phase in this benchmark."


@pytest.mark.usefixtures("quick_retries")
def test_retry_makes_a_linked_run_of_the_errors(
    client: TestClient, world: World, runtime: Runtime, setup: tuple[dict[str, str], str]
) -> None:
    auth, bm = setup
    with _failing_on_question_4() as stub:
        model = stub_model(world, stub)
        run = client.post(
            "/api/v1/runs", json={"benchmark_id": bm, "model_id": model}, headers=auth
        )
        drain(runtime)
        stub.fail = None
        retried = client.post(f"/api/v1/runs/{run.json()['id']}/retry", headers=auth)
        assert retried.status_code == 202, retried.text
        drain(runtime)
    linked = retried.json()
    assert linked["retry_of"] == run.json()["id"] and linked["question_count"] == 1
    rows = client.get(f"/api/v1/runs/{linked['id']}/results", headers=auth).json()["items"]
    assert [row["position"] for row in rows] == [4] and rows[0]["error"] is None
    again = client.post(f"/api/v1/runs/{linked['id']}/retry", headers=auth)
    assert again.status_code == 409


@pytest.mark.usefixtures("quick_retries")
def test_a_retry_whose_own_settings_no_longer_fit_is_a_conflict(
    client: TestClient, world: World, runtime: Runtime, setup: tuple[dict[str, str], str]
) -> None:
    """The scoring changed since to a method taking one sample: the retry sends no body, so a
    422 at ["body", "settings", "samples"] named a place the client never wrote."""
    auth, bm = setup
    with _failing_on_question_4() as stub:
        model = stub_model(world, stub)
        body = {"benchmark_id": bm, "model_id": model, "settings": {"samples": 2}}
        run = client.post("/api/v1/runs", json=body, headers=auth).json()
        drain(runtime)
        changed = client.put(
            f"/api/v1/benchmarks/{bm}/scoring", json={"method": "choice_logprob"}, headers=auth
        )
        assert changed.status_code == 200, changed.text
        retried = client.post(f"/api/v1/runs/{run['id']}/retry", headers=auth)
    assert retried.status_code == 409, retried.text
    assert "own settings no longer fit" in retried.json()["error"]["message"]
