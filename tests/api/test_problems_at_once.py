"""A refusal names every problem at once, each by its place (`body`, `query`, `path` first), as
do warnings: a title and bad questions together, an export's refusals, a mapping's JSON."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from benchgen.core.context import Context
from benchgen.core.errors import InvalidInput
from benchgen.core.permissions import PrincipalKind
from benchgen.db.tables import Benchmark
from benchgen.services.benchmarks import exports
from benchgen.services.chat import proposals
from tests.bundle_factory import bundle, competition, require_sandbox
from tests.support import MCQ, OPERATOR, QA, World

BAD_MCQ = [
    {"prompt": "Pick", "choices": ["x", "y"], "answer": "Q"},
    {"prompt": "", "choices": ["x", "y"], "answer": "A"},
]
EXPECTED = [
    ["body", "title"],
    ["body", "questions", 0, "answer"],
    ["body", "questions", 1, "prompt"],
]


@pytest.fixture
def auth(world: World) -> dict[str, str]:
    ana = world.user("ana@example.com")
    return {"Authorization": f"Bearer {world.token(ana, ['read', 'create', 'edit'])}"}


def _problems(response: Any) -> list[dict[str, Any]]:
    assert response.status_code == 422, response.text
    errors: list[dict[str, Any]] = response.json()["error"]["details"]["errors"]
    assert errors, response.text
    return errors


def test_an_empty_title_and_bad_questions_come_back_in_one_reply(
    client: TestClient, auth: dict[str, str]
) -> None:
    body = {"title": " ", "format": "mcq", "questions": BAD_MCQ}
    found = _problems(client.post("/api/v1/benchmarks", json=body, headers=auth))
    assert [problem["loc"] for problem in found] == EXPECTED


def test_an_edit_reports_its_title_with_its_questions(
    client: TestClient, auth: dict[str, str]
) -> None:
    made = client.post("/api/v1/benchmarks", json=MCQ, headers=auth).json()["benchmark"]["id"]
    change = {"title": "\u00ad", "questions": BAD_MCQ}
    for path in (f"/api/v1/benchmarks/{made}/preview-change", f"/api/v1/benchmarks/{made}"):
        method = "POST" if path.endswith("change") else "PATCH"
        found = _problems(client.request(method, path, json=change, headers=auth))
        assert [problem["loc"] for problem in found] == EXPECTED


def test_the_agent_door_checks_the_title_as_create_does(world: World) -> None:
    ana = world.user("ana@example.com")
    agent = world.principal(PrincipalKind.AGENT, ana)
    spec = {"title": "\u00ad", "format": "mcq", "questions": BAD_MCQ}
    with pytest.raises(InvalidInput) as refused:
        world.do(agent, proposals.propose, "conv_one", "create_benchmark", spec)
    assert [problem["loc"] for problem in refused.value.errors] == [loc[1:] for loc in EXPECTED]


def test_an_import_reports_its_title_with_its_lines(
    client: TestClient, auth: dict[str, str]
) -> None:
    unreadable = {"title": "", "format": "qa", "content": '{"prompt": "p", "answer": ["a"]}\n{'}
    found = _problems(client.post("/api/v1/benchmarks/import", json=unreadable, headers=auth))
    assert [problem["loc"] for problem in found] == [["body", "title"], ["body", "content", 2]]
    bad = {"title": "", "format": "qa", "content": '{"prompt": "", "answer": ["a"]}'}
    found = _problems(client.post("/api/v1/benchmarks/import", json=bad, headers=auth))
    assert [p["loc"] for p in found] == [["body", "title"], ["body", "content", 1, "prompt"]]
    upload = {"file": ("q.jsonl", b'{"prompt": "", "answer": ["a"]}\n')}
    sent = client.post(
        "/api/v1/benchmarks/import/file", files=upload, data={"title": " "}, headers=auth
    )
    assert [p["loc"] for p in _problems(sent)] == [["body", "title"], ["body", "file", 1, "prompt"]]


def test_warnings_are_placed_as_errors_are(client: TestClient, auth: dict[str, str]) -> None:
    twice = [*QA["questions"], QA["questions"][0]]
    made = client.post("/api/v1/benchmarks", json={**QA, "questions": twice}, headers=auth)
    assert made.json()["warnings"] == [
        {"loc": ["body", "questions", 2, "prompt"], "msg": "same prompt as question 1"}
    ]
    bm = made.json()["benchmark"]["id"]
    preview = client.post(
        f"/api/v1/benchmarks/{bm}/preview-change",
        json={"questions": [*twice, QA["questions"][1]]},
        headers=auth,
    )
    shown = [w["loc"] for w in preview.json()["warnings"]]
    assert shown == [["body", "questions", 2, "prompt"], ["body", "questions", 3, "prompt"]]
    lines = "".join(f'{{"prompt": "{q["prompt"]}", "answer": ["x"]}}\n' for q in twice)
    imported = client.post(
        "/api/v1/benchmarks/import",
        json={"title": "T", "format": "qa", "content": lines},
        headers=auth,
    )
    assert [w["loc"] for w in imported.json()["warnings"]] == [["body", "content", 3, "prompt"]]
    upload = {"file": ("q.jsonl", lines.encode())}
    sent = client.post(
        "/api/v1/benchmarks/import/file", files=upload, data={"title": "T"}, headers=auth
    )
    assert [w["loc"] for w in sent.json()["warnings"]] == [["body", "file", 3, "prompt"]]


def test_export_refusals_name_the_benchmark(
    client: TestClient, world: World, auth: dict[str, str]
) -> None:
    made = client.post("/api/v1/benchmarks", json=MCQ, headers=auth).json()["benchmark"]["id"]

    def custom(ctx: Context) -> None:
        row = ctx.session.get(Benchmark, made)
        assert row is not None
        row.format = "custom"

    world.ctx_call(OPERATOR, custom)
    for fmt in ("jsonl", "inspect", "lm_eval"):
        sent = client.get(f"/api/v1/benchmarks/{made}/export?format={fmt}", headers=auth)
        assert [p["loc"] for p in _problems(sent)] == [["path", "benchmark_id"]]
    with pytest.raises(InvalidInput) as refused:
        exports.task_name("bm-1")
    assert [problem["loc"] for problem in refused.value.errors] == [["benchmark_id"]]


@pytest.mark.parametrize(
    ("mapping", "loc", "said"),
    [
        ("[" * 9000, ["body", "mapping"], "nested too deeply"),
        ('{"prompt": "q", "prompt": "p"}', ["body", "mapping", "prompt"], "more than once"),
        ('{"prompt": ' + "9" * 5000 + "}", ["body", "mapping"], "too many digits"),
        ("{", ["body", "mapping"], "is not JSON"),
    ],
)
def test_a_mapping_is_json_read_strictly(
    client: TestClient, auth: dict[str, str], mapping: str, loc: list[Any], said: str
) -> None:
    upload = {"file": ("q.jsonl", b'{"prompt": "p", "answer": ["a"]}\n')}
    form = {"title": "T", "mapping": mapping}
    sent = client.post("/api/v1/benchmarks/import/file", files=upload, data=form, headers=auth)
    found = _problems(sent)
    assert found[0]["loc"] == loc and said in found[0]["msg"], found


def test_a_datasets_mapping_is_json_read_strictly(client: TestClient, world: World) -> None:
    ana = world.user("ana@example.com")
    auth = {"Authorization": f"Bearer {world.token(ana, ['read', 'train'])}"}
    upload = {"file": ("d.jsonl", b'{"prompt": "p", "completion": "c"}\n')}
    for mapping, loc in (
        ("[" * 9000, ["body", "mapping"]),
        ('{"a": 1, "a": 2}', ["body", "mapping", "a"]),
    ):
        form = {"name": "D", "mapping": mapping}
        sent = client.post("/api/v1/datasets", files=upload, data=form, headers=auth)
        assert [p["loc"] for p in _problems(sent)] == [loc]


@pytest.mark.parametrize(
    ("text", "loc"),
    [
        ('{"title": "T", "title": "U", "format": "qa"}', ["body", "title"]),
        (
            '{"title": "T", "format": "qa", "questions": [{"prompt": "p", "answer": "a"},'
            ' {"prompt": "q", "answer": "b", "metadata": {"k": 1, "k": 2}}]}',
            ["body", "questions", 1, "metadata", "k"],
        ),
    ],
)
def test_a_repeated_key_is_refused_where_it_is(
    client: TestClient, auth: dict[str, str], text: str, loc: list[Any]
) -> None:
    headers = {**auth, "Content-Type": "application/json"}
    found = _problems(client.post("/api/v1/benchmarks", content=text, headers=headers))
    assert [problem["loc"] for problem in found] == [loc]
    upload = {"file": ("q.jsonl", b'{"prompt": "p", "answer": ["a"]}\n')}
    form = {"title": "T", "mapping": '{"metadata": {"a": "x", "a": "y"}}'}
    sent = client.post("/api/v1/benchmarks/import/file", files=upload, data=form, headers=auth)
    assert [p["loc"] for p in _problems(sent)] == [["body", "mapping", "metadata", "a"]]


def test_a_number_too_long_to_read_is_said_so(client: TestClient, auth: dict[str, str]) -> None:
    text = '{"title": "T", "format": "qa", "questions": [], "x": ' + "9" * 5000 + "}"
    headers = {**auth, "Content-Type": "application/json"}
    found = _problems(client.post("/api/v1/benchmarks", content=text, headers=headers))
    assert found == [{"loc": ["body"], "msg": "not valid JSON: a number has too many digits"}]


def test_a_phase_id_no_phase_can_have_is_refused_not_echoed(
    client: TestClient, auth: dict[str, str]
) -> None:
    made = client.post("/api/v1/benchmarks", json=MCQ, headers=auth).json()["benchmark"]["id"]
    sent = client.get(f"/api/v1/benchmarks/{made}/leaderboard?phase_id={'x' * 5000}", headers=auth)
    assert [p["loc"] for p in _problems(sent)] == [["query", "phase_id"]]
    assert "x" * 100 not in sent.text


def test_a_bundles_warnings_are_placed_as_its_errors_are(
    client: TestClient, auth: dict[str, str]
) -> None:
    require_sandbox()
    files = {"bundle": ("b.zip", bundle(competition(mystery_key="?")), "application/zip")}
    made = client.post("/api/v1/benchmarks/bundles", files=files, headers=auth)
    assert made.status_code == 201, made.text
    warned = made.json()["warnings"]
    assert warned and all(warning["loc"][0] == "body" for warning in warned), warned
