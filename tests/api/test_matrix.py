"""The authorization matrix through HTTP: every /api/v1 route × every kind of caller.

The route list comes from the app's own route table, with the scope each route declares in
`openapi_extra["x-scope"]`. `ROUTES` below says how to build a valid request for each one; a route
the app serves without a row here (or a row for a route that is gone) fails
`test_every_route_has_matrix_rows`.

Cases, in the order they run against one seeded database (only the last may change anything):
no token, malformed, bad checksum, expired, revoked → 401 with `WWW-Authenticate: Bearer`;
missing scope → 403 (or allowed when the route needs no scope); another user's object → 404 (never
revealing it exists; routes without an object: allowed, and nothing of the owner's shows);
allowed → the route's success status.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from datetime import timedelta
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.routing import APIRoute
from fastapi.testclient import TestClient
from httpx import Response
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from benchgen.agent.brains import Brain
from benchgen.agent.messages import MessageIn
from benchgen.agent.turn import complete_turn
from benchgen.app import create_app
from benchgen.core.context import Principal
from benchgen.core.ids import new_id
from benchgen.core.permissions import Scope
from benchgen.db.tables import ApiToken
from benchgen.jobs.worker import Worker
from benchgen.services import models
from benchgen.services.accounts import credits, tokens
from benchgen.services.benchmarks import bundles
from benchgen.services.chat import conversations
from benchgen.services.datasets import datasets
from benchgen.services.runs import launch, submissions
from benchgen.services.runtime import Runtime
from benchgen.services.training import jobs
from tests.agent.scripted import begin_turn
from tests.bundle_factory import bundle, competition, results
from tests.snapshots import Snapshot
from tests.support import MCQ, OPERATOR, World, flat_routes

pytestmark = pytest.mark.both_backends  # the visibility filters are SQL

FIRST = "mdl_builtin_first"
ALL_SCOPES = sorted(scope.value for scope in Scope)
CASES = (
    "no_token",
    "malformed",
    "bad_checksum",
    "expired",
    "revoked",
    "missing_scope",
    "other_user",
    "allowed",
)
ERROR_CODES = {401: "unauthenticated", 403: "permission_denied", 404: "not_found", 409: "conflict"}


def api_routes(app: FastAPI) -> dict[tuple[str, str], str | None]:
    """Every (method, path) the app serves under /api/v1, with the scope it declares."""
    found: dict[tuple[str, str], str | None] = {}
    for path, route in flat_routes(app):
        if not path.startswith("/api/v1/") or not route.include_in_schema:
            continue
        extra = route.openapi_extra or {}
        assert "x-scope" in extra, f"{path} declares no x-scope"
        for method in route.methods or ():
            found[(method, path)] = extra["x-scope"]
    return found


@dataclass(frozen=True)
class Seed:
    """What every matrix test starts from: ana owns everything, bob owns nothing of hers."""

    ana: str
    bob: str
    benchmark: str  # ana's private mcq benchmark, frozen by its runs
    run: str  # ana's completed run on it
    queued: str  # ana's queued run on it
    model: str  # ana's own model endpoint
    conversation: str  # ana's conversation with the agent
    turn: str  # its first, finished turn
    custom: str  # ana's private custom benchmark (a bundle without solutions: nothing runs)
    submission: str  # ana's queued submission to it
    dataset: str  # ana's dataset
    base: str  # the operator's trainable SmolLM2
    training: str  # ana's queued training job on her dataset

    @property
    def private_ids(self) -> tuple[str, ...]:
        return (
            self.benchmark,
            self.run,
            self.queued,
            self.model,
            self.conversation,
            self.turn,
            self.custom,
            self.submission,
            self.dataset,
            self.training,
        )


@dataclass(frozen=True)
class Call:
    """One HTTP request."""

    method: str
    url: str
    json: Any = None
    params: dict[str, str] = field(default_factory=dict)
    files: dict[str, tuple[str, bytes, str]] | None = None  # a multipart body (with `data`)
    data: dict[str, str] | None = None


@dataclass(frozen=True)
class Row:
    """How to call a route validly, what success is, and whether it addresses ana's object."""

    build: Callable[[Seed], Call]
    ok: int = 200
    owned: bool = True


JSONL = '{"prompt": "2+2?", "answer": "4"}\n{"prompt": "3+3?", "answer": "6"}\n'
NEW_QA = {"title": "Sums", "format": "qa", "questions": [{"prompt": "1+1?", "answer": "2"}]}
NEW_MODEL = {"name": "Mine too", "endpoint_model": "m", "base_url": "http://127.0.0.1:9/v1"}
# A bundle with no solutions: uploading it runs no program, so the matrix needs no sandbox.
BUNDLE = bundle(competition(solutions=[]))
# A changed bundle for the new-version row: the current one again is refused as identical.
NEXT_BUNDLE = bundle(competition(solutions=[], description="The next version"))
SUBMISSION = results({"q1": "paris"})
DATASET = b'{"prompt": "2+2?", "completion": "4"}\n'


def _training(seed: Seed) -> dict[str, str]:
    return {"base_model_id": seed.base, "dataset_id": seed.dataset}


def _zip(field: str, data: bytes) -> dict[str, tuple[str, bytes, str]]:
    return {field: (f"{field}.zip", data, "application/zip")}


ROUTES: dict[tuple[str, str], Row] = {
    ("GET", "/api/v1/me"): Row(lambda s: Call("GET", "/api/v1/me"), owned=False),
    ("GET", "/api/v1/credits"): Row(lambda s: Call("GET", "/api/v1/credits"), owned=False),
    ("GET", "/api/v1/me/notifications"): Row(
        lambda s: Call("GET", "/api/v1/me/notifications"), owned=False
    ),
    ("PUT", "/api/v1/me/notifications"): Row(
        lambda s: Call("PUT", "/api/v1/me/notifications", {"email_on_finish": True}), owned=False
    ),
    ("GET", "/api/v1/benchmarks/{benchmark_id}/leaderboard/export"): Row(
        lambda s: Call(
            "GET", f"/api/v1/benchmarks/{s.benchmark}/leaderboard/export", params={"format": "csv"}
        )
    ),
    ("GET", "/api/v1/benchmarks"): Row(lambda s: Call("GET", "/api/v1/benchmarks"), owned=False),
    ("POST", "/api/v1/benchmarks"): Row(
        lambda s: Call("POST", "/api/v1/benchmarks", NEW_QA), ok=201, owned=False
    ),
    ("POST", "/api/v1/benchmarks/import"): Row(
        lambda s: Call(
            "POST",
            "/api/v1/benchmarks/import",
            {"title": "Imported", "format": "qa", "content": JSONL},
        ),
        ok=201,
        owned=False,
    ),
    ("POST", "/api/v1/benchmarks/import/file"): Row(
        lambda s: Call(
            "POST",
            "/api/v1/benchmarks/import/file",
            files={"file": ("qs.jsonl", JSONL.encode(), "application/x-ndjson")},
            data={"title": "Imported file"},
        ),
        ok=201,
        owned=False,
    ),
    ("GET", "/api/v1/benchmarks/{benchmark_id}/export"): Row(
        lambda s: Call(
            "GET", f"/api/v1/benchmarks/{s.benchmark}/export", params={"format": "jsonl"}
        )
    ),
    ("GET", "/api/v1/benchmarks/{benchmark_id}"): Row(
        lambda s: Call("GET", f"/api/v1/benchmarks/{s.benchmark}")
    ),
    ("GET", "/api/v1/benchmarks/{benchmark_id}/questions"): Row(
        lambda s: Call("GET", f"/api/v1/benchmarks/{s.benchmark}/questions")
    ),
    ("GET", "/api/v1/benchmarks/{benchmark_id}/run-quota"): Row(
        lambda s: Call("GET", f"/api/v1/benchmarks/{s.benchmark}/run-quota")
    ),
    ("GET", "/api/v1/benchmarks/{benchmark_id}/leaderboard"): Row(
        lambda s: Call("GET", f"/api/v1/benchmarks/{s.benchmark}/leaderboard")
    ),
    ("GET", "/api/v1/benchmarks/{benchmark_id}/scoring"): Row(
        lambda s: Call("GET", f"/api/v1/benchmarks/{s.benchmark}/scoring")
    ),
    ("PUT", "/api/v1/benchmarks/{benchmark_id}/scoring"): Row(
        lambda s: Call("PUT", f"/api/v1/benchmarks/{s.benchmark}/scoring", {"method": "choice"})
    ),
    ("PATCH", "/api/v1/benchmarks/{benchmark_id}"): Row(
        lambda s: Call("PATCH", f"/api/v1/benchmarks/{s.benchmark}", {"title": "Renamed"})
    ),
    ("POST", "/api/v1/benchmarks/{benchmark_id}/preview-change"): Row(
        lambda s: Call(
            "POST", f"/api/v1/benchmarks/{s.benchmark}/preview-change", {"title": "Renamed"}
        )
    ),
    ("POST", "/api/v1/benchmarks/{benchmark_id}/publish"): Row(
        lambda s: Call("POST", f"/api/v1/benchmarks/{s.benchmark}/publish")
    ),
    ("POST", "/api/v1/benchmarks/bundles"): Row(
        lambda s: Call("POST", "/api/v1/benchmarks/bundles", files=_zip("bundle", BUNDLE)),
        ok=201,
        owned=False,
    ),
    ("GET", "/api/v1/benchmarks/{benchmark_id}/bundle"): Row(
        lambda s: Call("GET", f"/api/v1/benchmarks/{s.custom}/bundle")
    ),
    ("POST", "/api/v1/benchmarks/{benchmark_id}/bundle"): Row(
        lambda s: Call(
            "POST", f"/api/v1/benchmarks/{s.custom}/bundle", files=_zip("bundle", NEXT_BUNDLE)
        )
    ),
    ("GET", "/api/v1/benchmarks/{benchmark_id}/bundle/download"): Row(
        lambda s: Call("GET", f"/api/v1/benchmarks/{s.custom}/bundle/download")
    ),
    ("POST", "/api/v1/benchmarks/{benchmark_id}/submissions"): Row(
        lambda s: Call(
            "POST",
            f"/api/v1/benchmarks/{s.custom}/submissions",
            files=_zip("submission", SUBMISSION),
            data={"phase": "0", "kind": "results"},
        ),
        ok=202,
    ),
    ("GET", "/api/v1/runs/{run_id}/program-output"): Row(
        lambda s: Call("GET", f"/api/v1/runs/{s.submission}/program-output")
    ),
    ("GET", "/api/v1/runs"): Row(lambda s: Call("GET", "/api/v1/runs"), owned=False),
    ("GET", "/api/v1/runs/estimate"): Row(
        lambda s: Call(
            "GET", "/api/v1/runs/estimate", params={"benchmark_id": s.benchmark, "model_id": FIRST}
        )
    ),
    ("POST", "/api/v1/runs"): Row(
        lambda s: Call("POST", "/api/v1/runs", {"benchmark_id": s.benchmark, "model_id": FIRST}),
        ok=202,
    ),
    ("POST", "/api/v1/runs/estimate"): Row(
        lambda s: Call(
            "POST", "/api/v1/runs/estimate", {"benchmark_id": s.benchmark, "model_id": FIRST}
        )
    ),
    # The seed's run has no errors: its owner gets as far as the conflict.
    ("POST", "/api/v1/runs/{run_id}/retry"): Row(
        lambda s: Call("POST", f"/api/v1/runs/{s.run}/retry"), ok=409
    ),
    ("GET", "/api/v1/runs/compare"): Row(
        lambda s: Call("GET", "/api/v1/runs/compare", params={"a": s.run, "b": s.run})
    ),
    ("GET", "/api/v1/runs/{run_id}"): Row(lambda s: Call("GET", f"/api/v1/runs/{s.run}")),
    ("GET", "/api/v1/runs/{run_id}/results"): Row(
        lambda s: Call("GET", f"/api/v1/runs/{s.run}/results")
    ),
    ("GET", "/api/v1/runs/{run_id}/log"): Row(lambda s: Call("GET", f"/api/v1/runs/{s.run}/log")),
    ("GET", "/api/v1/runs/{run_id}/export"): Row(
        lambda s: Call("GET", f"/api/v1/runs/{s.run}/export", params={"format": "csv"})
    ),
    ("POST", "/api/v1/runs/{run_id}/cancel"): Row(
        lambda s: Call("POST", f"/api/v1/runs/{s.queued}/cancel")
    ),
    ("POST", "/api/v1/runs/{run_id}/rescore"): Row(
        lambda s: Call("POST", f"/api/v1/runs/{s.run}/rescore")
    ),
    # The seed's run was not scored by an AI judge: its owner gets as far as the conflict.
    ("POST", "/api/v1/runs/{run_id}/rejudge"): Row(
        lambda s: Call("POST", f"/api/v1/runs/{s.run}/rejudge"), ok=409
    ),
    ("GET", "/api/v1/models"): Row(lambda s: Call("GET", "/api/v1/models"), owned=False),
    ("GET", "/api/v1/models/{model_id}"): Row(lambda s: Call("GET", f"/api/v1/models/{s.model}")),
    ("POST", "/api/v1/models"): Row(
        lambda s: Call("POST", "/api/v1/models", NEW_MODEL), ok=201, owned=False
    ),
    ("PATCH", "/api/v1/models/{model_id}"): Row(
        lambda s: Call("PATCH", f"/api/v1/models/{s.model}", {"name": "Renamed"})
    ),
    ("GET", "/api/v1/datasets"): Row(lambda s: Call("GET", "/api/v1/datasets"), owned=False),
    ("POST", "/api/v1/datasets"): Row(
        lambda s: Call(
            "POST",
            "/api/v1/datasets",
            files={"file": ("data.jsonl", DATASET, "application/x-ndjson")},
            data={"name": "Sums"},
        ),
        ok=201,
        owned=False,
    ),
    ("GET", "/api/v1/datasets/{dataset_id}"): Row(
        lambda s: Call("GET", f"/api/v1/datasets/{s.dataset}")
    ),
    ("GET", "/api/v1/compute"): Row(lambda s: Call("GET", "/api/v1/compute"), owned=False),
    ("GET", "/api/v1/training-bases"): Row(
        lambda s: Call("GET", "/api/v1/training-bases"), owned=False
    ),
    ("POST", "/api/v1/training-jobs/estimate"): Row(
        lambda s: Call("POST", "/api/v1/training-jobs/estimate", _training(s))
    ),
    ("POST", "/api/v1/training-jobs"): Row(
        lambda s: Call("POST", "/api/v1/training-jobs", _training(s)), ok=202
    ),
    ("GET", "/api/v1/training-jobs"): Row(
        lambda s: Call("GET", "/api/v1/training-jobs"), owned=False
    ),
    ("GET", "/api/v1/training-jobs/{training_id}"): Row(
        lambda s: Call("GET", f"/api/v1/training-jobs/{s.training}")
    ),
    ("GET", "/api/v1/training-jobs/{training_id}/log"): Row(
        lambda s: Call("GET", f"/api/v1/training-jobs/{s.training}/log")
    ),
    ("POST", "/api/v1/training-jobs/{training_id}/cancel"): Row(
        lambda s: Call("POST", f"/api/v1/training-jobs/{s.training}/cancel")
    ),
    ("POST", "/api/v1/chat/conversations"): Row(
        lambda s: Call("POST", "/api/v1/chat/conversations"), ok=201, owned=False
    ),
    ("GET", "/api/v1/chat/conversations"): Row(
        lambda s: Call("GET", "/api/v1/chat/conversations"), owned=False
    ),
    ("GET", "/api/v1/chat/conversations/{conversation_id}"): Row(
        lambda s: Call("GET", f"/api/v1/chat/conversations/{s.conversation}")
    ),
    ("POST", "/api/v1/chat/conversations/{conversation_id}/messages"): Row(
        lambda s: Call(
            "POST", f"/api/v1/chat/conversations/{s.conversation}/messages", {"text": "hello"}
        )
    ),
    ("GET", "/api/v1/chat/conversations/{conversation_id}/turns/{turn_id}"): Row(
        lambda s: Call("GET", f"/api/v1/chat/conversations/{s.conversation}/turns/{s.turn}")
    ),
}


def _answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    return ModelResponse(parts=[TextPart("Hello.")])


# A brain that only talks: the matrix checks who may chat, not what the agent does.
BRAIN = Brain("scripted", FunctionModel(_answer, model_name="scripted"))


@pytest.fixture
def app(runtime: Runtime) -> FastAPI:
    # Model endpoints on 127.0.0.1 are allowed, as an operator's allow-list would.
    runtime.settings = runtime.settings.model_copy(update={"model_host_allowlist": "127.0.0.1"})
    return create_app(runtime.settings, runtime, brain=BRAIN)


@pytest.fixture
def client(app: FastAPI) -> Iterator[TestClient]:
    with TestClient(app) as test_client:
        yield test_client


@pytest.fixture(scope="module")
def seeded() -> dict[str, tuple[Seed, Snapshot]]:
    """Each backend's seed, built by its first matrix test and put back for the others."""
    return {}


@pytest.fixture
def seed(
    world: World,
    runtime: Runtime,
    backend: str,
    seeded: dict[str, tuple[Seed, Snapshot]],
    tmp_path_factory: pytest.TempPathFactory,
) -> Seed:
    """The seed in this test's own database: built through the services by the backend's
    first test, restored for the others from a snapshot of its rows and files (the same
    state, without building it again)."""
    if backend in seeded:
        made, snapshot = seeded[backend]
        snapshot.restore(runtime)
        return made
    made = _build_seed(world, runtime)
    seeded[backend] = (made, Snapshot.take(runtime, tmp_path_factory.mktemp("matrix-seed")))
    return made


def _build_seed(world: World, runtime: Runtime) -> Seed:
    ana, bob = world.user("ana@example.com"), world.user("bob@example.com")
    benchmark = world.benchmark(ana, MCQ)
    web = Principal.web(ana)
    done = world.do(web, launch.start_run, benchmark, FIRST)
    worker = Worker(runtime)
    while worker.run_once():
        pass
    queued = world.do(web, launch.start_run, benchmark, FIRST)
    spec = {"name": "Mine", "endpoint_model": "m", "base_url": "http://127.0.0.1:9/v1"}
    model = world.do(web, models.create_model, spec)
    conversation = world.do(web, conversations.create_conversation).id
    hello = MessageIn(text="hello")
    turn = complete_turn(begin_turn(runtime, web, conversation, hello), BRAIN)
    custom = world.do(web, bundles.upload_bundle, BUNDLE, "seed.zip").benchmark.id
    # Left queued: no worker runs in the matrix, so no program runs either.
    submitted = world.do(web, submissions.submit, custom, SUBMISSION, "seed.zip")
    dataset = world.do(web, datasets.upload_dataset, DATASET, "seed.jsonl", {"name": "Seed"})
    smollm2 = {"name": "SmolLM2", "kind": "local_gguf", "endpoint_model": "smollm2"}
    base = world.do(OPERATOR, models.create_platform_model, smollm2)
    world.do(OPERATOR, credits.grant_credits, ana, 10)  # a training step costs a credit
    training = world.do(
        web, jobs.start_training, {"base_model_id": base.id, "dataset_id": dataset.id}
    )
    return Seed(
        ana,
        bob,
        benchmark,
        done.id,
        queued.id,
        model.id,
        conversation,
        turn.id,
        custom,
        submitted.id,
        dataset.id,
        base.id,
        training.id,
    )


def _expired(world: World, user_id: str) -> str:
    secret = world.token(user_id, ALL_SCOPES)
    token_id = world.api(secret).token_id

    def expire(ctx: Any) -> None:
        ctx.session.get(ApiToken, token_id).expires_at = ctx.now() - timedelta(seconds=1)

    world.ctx_call(OPERATOR, expire)
    return secret


def _revoked(world: World, user_id: str) -> str:
    secret = world.token(user_id, ALL_SCOPES)
    world.do(OPERATOR, tokens.revoke_token, world.api(secret).token_id)
    return secret


def _bad_checksum(world: World, user_id: str) -> str:
    secret = world.token(user_id, ALL_SCOPES)
    body_start = len("bgp_")
    flipped = "B" if secret[body_start] == "A" else "A"
    return secret[:body_start] + flipped + secret[body_start + 1 :]


def _headers(world: World, seed: Seed, case: str, scope: str | None) -> dict[str, str]:
    secrets: dict[str, Callable[[], str]] = {
        "malformed": lambda: "not-a-token",
        "bad_checksum": lambda: _bad_checksum(world, seed.ana),
        "expired": lambda: _expired(world, seed.ana),
        "revoked": lambda: _revoked(world, seed.ana),
        "missing_scope": lambda: world.token(
            seed.ana, [name for name in ALL_SCOPES if name != (scope or "")] if scope else ["train"]
        ),
        "other_user": lambda: world.token(seed.bob, ALL_SCOPES),
        "allowed": lambda: world.token(seed.ana, ALL_SCOPES),
    }
    if case == "no_token":
        return {}
    return {"Authorization": f"Bearer {secrets[case]()}"}


def _expected(row: Row, case: str, scope: str | None) -> int:
    if case in ("no_token", "malformed", "bad_checksum", "expired", "revoked"):
        return 401
    if case == "missing_scope":
        return 403 if scope else row.ok
    if case == "other_user":
        return 404 if row.owned else row.ok
    return row.ok


def _problems(response: Response, expected: int, case: str, seed: Seed) -> list[str]:
    """What is wrong with one response, as readable lines (empty: all good)."""
    problems: list[str] = []
    if response.status_code != expected:
        return [f"status {response.status_code}, expected {expected}: {response.text[:300]}"]
    if expected >= 400:
        body = response.json()
        if set(body) != {"error"} or set(body["error"]) != {"code", "message", "details"}:
            problems.append(f"not the error envelope: {body}")
        elif body["error"]["code"] != ERROR_CODES[expected]:
            problems.append(f"code {body['error']['code']!r}, expected {ERROR_CODES[expected]!r}")
        elif not isinstance(body["error"]["details"], dict) or not body["error"]["message"]:
            problems.append(f"details must be an object and message non-empty: {body}")
        if expected == 401 and response.headers.get("WWW-Authenticate") != "Bearer":
            problems.append("401 without 'WWW-Authenticate: Bearer'")
    elif case == "other_user":
        leaked = [found for found in seed.private_ids if found in response.text]
        if leaked:
            problems.append(f"another user's private objects show: {leaked}")
    return problems


def _send(client: TestClient, call: Call, headers: dict[str, str]) -> Response:
    return client.request(
        call.method,
        call.url,
        json=call.json,
        params=call.params,
        files=call.files,
        data=call.data,
        headers=headers,
    )


_GHOSTS: dict[Seed, Seed] = {}


def _ghosts(seed: Seed) -> Seed:
    """The same seed with every object of ana's swapped for an id that exists nowhere."""
    if seed not in _GHOSTS:
        _GHOSTS[seed] = replace(
            seed,
            benchmark=new_id("bm"),
            run=new_id("run"),
            queued=new_id("run"),
            model=new_id("mdl"),
            conversation=new_id("conv"),
            turn=new_id("turn"),
            custom=new_id("bm"),
            submission=new_id("run"),
        )
    return _GHOSTS[seed]


def _without_ids(response: Response, seed: Seed) -> tuple[int, str]:
    text = response.text
    for found in seed.private_ids:
        text = text.replace(found, "<id>")
    return response.status_code, text


def test_every_route_has_matrix_rows(app: FastAPI) -> None:
    served = set(api_routes(app))
    assert served, "no /api/v1 routes found in the app's route table"
    missing = sorted(served - set(ROUTES))
    stale = sorted(set(ROUTES) - served)
    assert not missing, f"routes without authorization-matrix rows: {missing}"
    assert not stale, f"matrix rows for routes the app no longer serves: {stale}"


@pytest.mark.parametrize("route", sorted(ROUTES), ids=lambda key: f"{key[0]} {key[1]}")
def test_authorization_matrix(
    route: tuple[str, str], app: FastAPI, client: TestClient, world: World, seed: Seed
) -> None:
    scope = api_routes(app)[route]
    row = ROUTES[route]
    failures = []
    for case in CASES:  # "allowed" last: it is the only case that may change anything
        headers = _headers(world, seed, case, scope)
        response = _send(client, row.build(seed), headers)
        expected = _expected(row, case, scope)
        failures += [f"{case}: {problem}" for problem in _problems(response, expected, case, seed)]
        if case == "other_user" and row.owned:
            # Never reveal it exists: the answer must be the one for an id that does not exist.
            ghost = _send(client, row.build(_ghosts(seed)), headers)
            seen, unseen = _without_ids(response, seed), _without_ids(ghost, _ghosts(seed))
            if seen != unseen:
                failures.append(f"{case}: differs from a missing object's {unseen}: {seen}")
    assert not failures, f"{route[0]} {route[1]} (scope {scope}):\n" + "\n".join(failures)


def _refused_input(path: str, route: APIRoute) -> tuple[str, bool]:
    """The route's URL with made-up ids, and whether a request to it with a broken JSON body
    and no query parameters is invalid input (a body, or a required query parameter)."""
    url = path
    for name in route.param_convertors:
        url = url.replace(f"{{{name}}}", "x")
    needs_query = any(param.field_info.is_required() for param in route.dependant.query_params)
    return url, route.body_field is not None or needs_query


def _send_broken(client: TestClient, method: str, url: str, headers: dict[str, str]) -> Response:
    """A request whose JSON body breaks off after its first character."""
    sent = {"Content-Type": "application/json", **headers}
    return client.request(method, url, content=b'{"', headers=sent)


def test_a_bad_token_gets_401_before_any_422(
    app: FastAPI, client: TestClient, world: World
) -> None:
    ana = world.user("ana@example.com")
    bad = {
        "no_token": {},
        "malformed": {"Authorization": "Bearer not-a-token"},
        "expired": {"Authorization": f"Bearer {_expired(world, ana)}"},
        "revoked": {"Authorization": f"Bearer {_revoked(world, ana)}"},
    }
    valid = {"Authorization": f"Bearer {world.token(ana, ALL_SCOPES)}"}
    failures, invalid = [], 0
    for path, route in flat_routes(app):
        if not path.startswith("/api/v1/"):
            continue
        url, refused = _refused_input(path, route)
        for method in route.methods or ():
            for case, headers in bad.items():
                response = _send_broken(client, method, url, headers)
                if response.status_code != 401:
                    failures.append(f"{case} {method} {path}: {response.status_code}")
            if refused:
                answer = _send_broken(client, method, url, valid)
                assert answer.status_code == 422, (method, path, answer.text)
                invalid += 1
    assert invalid > 20, "too few routes refused the broken input to test anything"
    assert not failures, "\n".join(failures)
