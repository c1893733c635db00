"""The client's response shapes match the server's OpenAPI document, field by field, and each
call's return type is what its route answers."""

from __future__ import annotations

import copy
import inspect
import re
import shutil
from collections.abc import Callable, Mapping
from pathlib import Path
from types import NoneType, UnionType
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints, is_typeddict

import httpx
import pytest

from benchgen.app import create_app
from benchgen.client import BenchGen, shapes
from benchgen.core.config import Settings

# Each client shape and the component schema of the server's response it mirrors. A shape added
# to shapes.py must be added here (a test checks), so no copy goes unchecked.
MIRRORS: dict[type, str] = {
    shapes.Me: "Me",
    shapes.LedgerLine: "LedgerLine",
    shapes.Benchmark: "BenchmarkView",
    shapes.Question: "Question",
    shapes.CreatedBenchmark: "CreatedBenchmark",
    shapes.ChangePreview: "ChangePreview",
    shapes.EditedBenchmark: "EditedBenchmark",
    shapes.LeaderboardRow: "Row",
    shapes.Leaderboard: "LeaderboardPage",
    shapes.Model: "ModelView",
    shapes.Dataset: "DatasetView",
    shapes.ComputePool: "PoolView",
    shapes.TrainingBase: "BaseChoice",
    shapes.ComputePlan: "ComputePlan",
    shapes.TrainingPlan: "TrainingPlan",
    shapes.TrainingJob: "TrainingJobView",
    shapes.TrainingLogLine: "TrainingLogLine",
    shapes.Estimate: "Estimate",
    shapes.Run: "RunView",
    shapes.Bundle: "BundleView",
    shapes.LogLine: "LogLine",
    shapes.Rescore: "Rescore",
    shapes.Rejudging: "Rejudging",
    shapes.Comparison: "Comparison",
    shapes.TagDifference: "TagDifference",
    shapes.PairedItem: "PairedItem",
    shapes.Scoring: "ScoringOut",
    shapes.Notifications: "NotificationSettings",
    shapes.Conversation: "ConversationView",
    shapes.Button: "Button",
    shapes.Proposal: "ProposalOut",
    shapes.Turn: "TurnOut",
    shapes.TurnRecord: "TurnRecord",
    shapes.Transcript: "Transcript",
}

# Arguments enough for each call to send its request; the route it reaches is looked up in the
# document, so a call sent to the wrong route, or typed with the wrong shape, shows.
CALLS: dict[str, dict[str, Any]] = {
    "me": {},
    "credits": {},
    "list_benchmarks": {},
    "get_benchmark": {"benchmark_id": "bm_1"},
    "questions": {"benchmark_id": "bm_1"},
    "create_benchmark": {"title": "t", "format": "qa", "questions": []},
    "import_benchmark": {"title": "t", "format": "qa", "content": ""},
    "change_benchmark": {"benchmark_id": "bm_1", "title": "t"},
    "preview_change": {"benchmark_id": "bm_1", "title": "t"},
    "publish": {"benchmark_id": "bm_1"},
    "leaderboard": {"benchmark_id": "bm_1"},
    "models": {},
    "get_model": {"model_id": "mdl_1"},
    "create_model": {"name": "m", "endpoint_model": "m"},
    "update_model": {"model_id": "mdl_1", "name": "m"},
    "upload_dataset": {"source": b"{}", "name": "d"},
    "datasets": {},
    "get_dataset": {"dataset_id": "ds_1"},
    "compute": {},
    "training_bases": {},
    "plan_training": {"base_model_id": "mdl_1", "dataset_id": "ds_1"},
    "start_training": {"base_model_id": "mdl_1", "dataset_id": "ds_1"},
    "training_jobs": {},
    "training_job": {"training_id": "tr_1"},
    "training_log": {"training_id": "tr_1"},
    "cancel_training": {"training_id": "tr_1"},
    "estimate": {"benchmark_id": "bm_1", "model_id": "mdl_1"},
    "start_run": {"benchmark_id": "bm_1", "model_id": "mdl_1"},
    "list_runs": {},
    "run": {"run_id": "run_1"},
    "results": {"run_id": "run_1"},
    "log": {"run_id": "run_1"},
    "cancel": {"run_id": "run_1"},
    "retry": {"run_id": "run_1"},
    "rescore": {"run_id": "run_1"},
    "rejudge": {"run_id": "run_1"},
    "compare_runs": {"a": "run_1", "b": "run_2"},
    "get_scoring": {"benchmark_id": "bm_1"},
    "set_scoring": {"benchmark_id": "bm_1", "method": "includes"},
    "notifications": {},
    "set_notifications": {},
    "import_file": {"source": b"{}", "title": "t"},
    "upload_bundle": {"bundle": b"PK"},
    "get_bundle": {"benchmark_id": "bm_1"},
    "upload_bundle_version": {"benchmark_id": "bm_1", "bundle": b"PK"},
    "submit": {"benchmark_id": "bm_1", "submission": b"PK", "phase": 0},
    "program_output": {"run_id": "run_1"},
    "create_conversation": {},
    "list_conversations": {},
    "get_conversation": {"conversation_id": "conv_1"},
    "send_message": {"conversation_id": "conv_1", "text": "hi"},
    "get_turn": {"conversation_id": "conv_1", "turn_id": "turn_1"},
}
# Public methods that send no request of their own or read no JSON.
NOT_CALLS = {
    "close": "closes the pool",
    "wait_for_run": "polls `run`",
    "wait_for_turn": "polls `get_turn`",
    "wait_for_training": "polls `training_job`",
    "export": "returns the file's text (JSON lines or CSV), not a JSON body",
    "download_bundle": "returns the zip's bytes, not a JSON body",
    "export_benchmark": "returns the file's bytes (JSON lines or a zip), not a JSON body",
    "export_leaderboard": "returns the file's bytes (CSV or JSON), not a JSON body",
}


@pytest.fixture(scope="module")
def openapi(sqlite_template: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The app's OpenAPI document, as `/api/v1/openapi.json` serves it."""
    data = tmp_path_factory.mktemp("openapi")
    shutil.copy(sqlite_template, data / "benchgen.db")  # already migrated: no wait
    app = create_app(Settings(data_dir=data, database_url=f"sqlite:///{data / 'benchgen.db'}"))
    try:
        return app.openapi()
    finally:
        app.state.turn_runner.close()
        app.state.runtime.close()


@pytest.fixture
def schemas(openapi: dict[str, Any]) -> dict[str, Any]:
    """A copy of the document's component schemas, for a test to change at will."""
    return copy.deepcopy(openapi["components"]["schemas"])


def test_every_shape_has_a_mirror() -> None:
    defined = {
        value
        for _, value in inspect.getmembers(shapes, is_typeddict)
        if value.__module__ == shapes.__name__
    }
    assert defined == set(MIRRORS)


@pytest.mark.parametrize("shape", list(MIRRORS), ids=lambda shape: shape.__name__)
def test_shape_matches_the_server_schema(shape: type, schemas: dict[str, Any]) -> None:
    assert differences(shape, schemas) == []


def test_every_call_returns_the_shape_its_route_answers(openapi: dict[str, Any]) -> None:
    public = {
        name
        for name, _ in inspect.getmembers(BenchGen, inspect.isfunction)
        if not name.startswith("_")
    }
    assert public == set(CALLS) | set(NOT_CALLS)
    schemas = openapi["components"]["schemas"]
    problems: list[str] = []
    for name, kwargs in CALLS.items():
        method, path = _request_of(name, kwargs)
        answer = _success_schema(openapi, method, path)
        returned = get_type_hints(getattr(BenchGen, name))["return"]
        if get_origin(returned) is list:  # a list call reads every page of a `Page`
            page = schemas[_ref_name(answer)]
            assert set(page["properties"]) == {"items", "next_cursor"}, name
            answer = page["properties"]["items"]
        if not _matches(returned, answer, schemas):
            problems.append(f"{name} ({method} {path}) returns {returned}, the route {answer}")
    assert problems == []


# ---------------------------------------------------------------- the check, proved to fail


def _drop(schema: str, field: str) -> Callable[[dict[str, Any]], None]:
    def change(schemas: dict[str, Any]) -> None:
        del schemas[schema]["properties"][field]
        schemas[schema]["required"].remove(field)

    return change


def _add(schema: str, field: str, spec: dict[str, Any]) -> Callable[[dict[str, Any]], None]:
    def change(schemas: dict[str, Any]) -> None:
        schemas[schema]["properties"][field] = spec
        schemas[schema]["required"].append(field)

    return change


def _retype(schema: str, field: str, spec: dict[str, Any]) -> Callable[[dict[str, Any]], None]:
    def change(schemas: dict[str, Any]) -> None:
        schemas[schema]["properties"][field] = spec

    return change


def _unrequire(schema: str, field: str) -> Callable[[dict[str, Any]], None]:
    def change(schemas: dict[str, Any]) -> None:
        schemas[schema]["required"].remove(field)

    return change


def _more_statuses(schemas: dict[str, Any]) -> None:
    schemas["TurnStatus"]["enum"].append("paused")


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


@pytest.mark.parametrize(
    ("change", "shape", "field"),
    [
        pytest.param(_drop("ModelView", "formats"), shapes.Model, "formats", id="removed"),
        pytest.param(
            _add("RunView", "priority", {"type": "integer"}), shapes.Run, "priority", id="added"
        ),
        pytest.param(
            _retype("Me", "credits", {"type": "number"}), shapes.Me, "credits", id="retyped"
        ),
        pytest.param(
            _retype("BenchmarkView", "title", {"anyOf": [{"type": "string"}, {"type": "null"}]}),
            shapes.Benchmark,
            "title",
            id="nullable",
        ),
        pytest.param(
            _retype("Question", "tags", {"type": "array", "items": {"type": "integer"}}),
            shapes.Question,
            "tags",
            id="item-type",
        ),
        pytest.param(
            _retype("LeaderboardPage", "rows", {"type": "array", "items": _ref("RunView")}),
            shapes.Leaderboard,
            "rows",
            id="nested-shape",
        ),
        pytest.param(
            _retype("ModelView", "owner", {"type": "string"}), shapes.Model, "owner", id="enum"
        ),
        pytest.param(_more_statuses, shapes.Turn, "status", id="enum-value"),
        pytest.param(_unrequire("RunView", "cost"), shapes.Run, "cost", id="optional"),
        pytest.param(
            _add("Question", "difficulty", {"type": "string"}),
            shapes.Question,
            "difficulty",
            id="added-to-a-shape-with-optional-keys",
        ),
    ],
)
def test_a_server_change_the_client_missed_is_reported(
    change: Callable[[dict[str, Any]], None], shape: type, field: str, schemas: dict[str, Any]
) -> None:
    change(schemas)
    found = differences(shape, schemas)
    assert len(found) == 1 and found[0].startswith(f"{shape.__name__}.{field}:"), found


# ---------------------------------------------------------------- comparison

# Python types and the JSON schema `type` each one is sent as.
_SCALARS: dict[object, str] = {
    str: "string",
    int: "integer",
    float: "number",
    bool: "boolean",
    NoneType: "null",
}


def differences(shape: type, schemas: Mapping[str, Any]) -> list[str]:
    """How `shape` differs from the schema it mirrors: fields, required-ness and types."""
    schema = schemas[MIRRORS[shape]]
    fields: dict[str, Any] = schema.get("properties", {})
    required = set(schema.get("required", []))
    hints = get_type_hints(shape)
    found = [
        f"{shape.__name__}.{name}: sent by the server, missing in the client"
        for name in sorted(fields.keys() - hints.keys())
    ]
    found += [
        f"{shape.__name__}.{name}: in the client, not sent by the server"
        for name in sorted(hints.keys() - fields.keys())
    ]
    for name in sorted(hints.keys() & fields.keys()):
        where = f"{shape.__name__}.{name}"
        if (name in shape.__required_keys__) != (name in required):  # type: ignore[attr-defined]
            side = "server" if name in required else "client"
            found.append(f"{where}: required by the {side} only")
        elif not _matches(hints[name], fields[name], schemas):
            found.append(f"{where}: the client says {hints[name]}, the server {fields[name]}")
    return found


def _matches(annotation: Any, schema: Mapping[str, Any], schemas: Mapping[str, Any]) -> bool:
    """Whether values of `schema` are exactly the values `annotation` describes."""
    origin, args = get_origin(annotation), get_args(annotation)
    members = args if origin in (Union, UnionType) else (annotation,)
    if "anyOf" in schema:
        branches = schema["anyOf"]
        return (
            len(members) == len(branches)
            and all(
                any(_matches(member, branch, schemas) for branch in branches) for member in members
            )
            and all(
                any(_matches(member, branch, schemas) for member in members) for branch in branches
            )
        )
    if len(members) > 1:
        return False
    if "$ref" in schema and "enum" in schemas.get(_ref_name(schema), {}):
        return _matches(annotation, schemas[_ref_name(schema)], schemas)  # a named enum
    if "$ref" in schema:
        return is_typeddict(annotation) and MIRRORS.get(annotation) == _ref_name(schema)
    if "enum" in schema or origin is Literal:
        return origin is Literal and sorted(args) == sorted(schema.get("enum", []))
    kind = schema.get("type")
    if annotation is Any:  # anything at all: no constraint in the schema either
        return not schema
    if annotation in _SCALARS:
        return kind == _SCALARS[annotation]
    if origin is list:
        return kind == "array" and _matches(args[0], schema.get("items", {}), schemas)
    if origin is dict:
        values = schema.get("additionalProperties", True)
        return (
            kind == "object"
            and "properties" not in schema
            and args[0] is str
            and _matches(args[1], {} if values is True else values, schemas)
        )
    return False


def _ref_name(schema: Mapping[str, Any]) -> str:
    return str(schema.get("$ref", "")).rsplit("/", 1)[-1]


def _request_of(name: str, kwargs: dict[str, Any]) -> tuple[str, str]:
    """The method and path that calling `name` sends (every answer is an empty page)."""
    sent: list[httpx.Request] = []

    def record(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(200, json={"items": [], "next_cursor": None})

    with BenchGen("http://bench.test", "bgp_x", transport=httpx.MockTransport(record)) as bg:
        getattr(bg, name)(**kwargs)
    assert len({(r.method, r.url.path) for r in sent}) == 1, name
    return sent[0].method, sent[0].url.path


def _success_schema(openapi: Mapping[str, Any], method: str, path: str) -> dict[str, Any]:
    """The JSON schema of the one 2xx answer of the route that serves `method path`."""
    candidates = [
        (template.count("{"), operations[method.lower()])
        for template, operations in openapi["paths"].items()
        if method.lower() in operations
        and re.fullmatch(re.sub(r"\{[^/]+\}", "[^/]+", template), path)
    ]
    assert candidates, f"no route serves {method} {path}"
    _, operation = min(candidates, key=lambda found: found[0])  # /runs/estimate over /runs/{id}
    answers = [body for status, body in operation["responses"].items() if status.startswith("2")]
    assert len(answers) == 1, f"{method} {path}"
    return dict(answers[0]["content"]["application/json"]["schema"])
