"""What competition.yaml holds that the platform keeps and shows as it is (the `docker_image`,
the Codabench keys kept in `extra`) is refused with its place when it cannot be stored, sent
back as JSON, or shown as one line."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import yaml
from fastapi.testclient import TestClient

from benchgen.app import create_app
from benchgen.bundles.competition import parse_competition
from benchgen.core.errors import InvalidInput
from benchgen.services.runtime import Runtime
from tests.bundle_factory import bundle, competition
from tests.support import World

KEY_MSG = "a key holds a NUL (U+0000) or a lone surrogate (U+D800 to U+DFFF), which is not text"


def _yaml(tail: str) -> str:
    return yaml.safe_dump(competition(docker_image=None), sort_keys=False) + tail


@pytest.mark.parametrize("key", ["\\ud800", "\\0", "ok\\udfff"])
def test_a_kept_key_that_is_not_text_is_refused_at_its_mapping(key: str) -> None:
    text = _yaml(f'fact_sheet:\n  fine: 1\n  nested:\n    "{key}": 2\n')
    with pytest.raises(InvalidInput) as caught:
        parse_competition(text)
    line = text.splitlines().index(f'    "{key}": 2') + 1
    assert caught.value.errors == [{"loc": ["fact_sheet", "nested"], "line": line, "msg": KEY_MSG}]


@pytest.mark.parametrize(
    ("image", "msg"),
    [
        ('"python\\u202e:3.11"', "must not contain U+202E"),
        ('"python:3.11\\nrm -rf"', "must not contain U+000A"),
        ("x" * 500, "must be at most 456 characters (it has 500)"),
        ('"\\u200b"', "must not contain U+200B"),
    ],
)
def test_a_docker_image_that_is_not_one_shown_line_is_refused(image: str, msg: str) -> None:
    text = _yaml(f"docker_image: {image}\n")
    with pytest.raises(InvalidInput) as caught:
        parse_competition(text)
    [error] = caught.value.errors
    assert error["loc"] == ["docker_image"] and error["line"] == len(text.splitlines())
    assert error["msg"].startswith(msg), error


def test_a_long_real_docker_reference_is_kept() -> None:
    image = f"{'r' * 200}/{'n' * 54}:{'t' * 128}@sha256:{'0' * 64}"
    assert parse_competition(_yaml(f"docker_image: ' {image} '\n")).docker_image == image


@pytest.fixture
def client(runtime: Runtime) -> Iterator[TestClient]:
    with TestClient(create_app(runtime.settings, runtime)) as test_client:
        yield test_client


def test_an_upload_with_such_a_key_is_a_422_and_creates_nothing(
    client: TestClient, world: World
) -> None:
    ana = world.user("ana@example.com")
    headers = {"Authorization": f"Bearer {world.token(ana, ['read', 'create'])}"}
    text = _yaml('fact_sheet: {"\\ud800": 1}\n').encode()
    files = {"bundle": ("odd.zip", bundle(extra={"competition.yaml": text}), "application/zip")}
    answer = client.post("/api/v1/benchmarks/bundles", files=files, headers=headers)
    assert answer.status_code == 422, answer.text
    assert answer.json()["error"]["details"]["errors"][0]["msg"] == KEY_MSG
    assert client.get("/api/v1/benchmarks", headers=headers).json()["items"] == []


def test_leaderboards_after_the_first_get_one_warning_not_silence() -> None:
    comp = competition()
    for index in (1, 2):
        board = {"index": index, "key": f"extra{index}", "columns": [{"index": 0, "key": "r"}]}
        comp["leaderboards"].append(board)
    text = yaml.safe_dump(comp, sort_keys=False)
    [warning] = parse_competition(text).warnings
    assert warning.loc == ("leaderboards", 1)
    lines = text.splitlines()
    assert lines[warning.line - 1].strip() == "- index: 1"
    assert lines[warning.line].strip() == "key: extra1"
    assert warning.msg.startswith("only the first leaderboard is used")
