"""Who may download what, through the API and the web app: a private benchmark's key, its
leaderboard and each run's answers, for its owner, a participant, a removed collaborator and a
stranger; every download is named by ids alone, whatever the benchmark's title."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest
from fastapi.testclient import TestClient
from httpx import Response

from benchgen.core.context import Principal
from benchgen.services.benchmarks import members
from benchgen.services.runs import launch, leaderboards
from benchgen.services.runtime import Runtime
from tests.api.test_flows import bearer
from tests.services.test_runs import work_all
from tests.support import MCQ, World
from tests.web.support import WebUser

# Quotes, a header break, separators, a path and non-ASCII: none of it may reach a header.
TITLE = 'a"b; filename="../../x.sh" ñ 東京 / \\ ' + "y" * 150
SAFE_NAME = re.compile(r'attachment; filename="[A-Za-z0-9_.-]+"')
FILES = ("key", "board", "ana_run", "pia_run", "cole_run")
# What each person may download (HTTP status), in the order of FILES.
ALLOWED = {
    "ana": (200, 200, 200, 200, 200),  # the owner
    "pia": (403, 200, 404, 200, 404),  # a participant: the board and her own run
    "cole": (404, 404, 404, 404, 200),  # a collaborator removed since: his own run only
    "sam": (404, 404, 404, 404, 404),  # a stranger: nothing, not even that it exists
}


def _private_benchmark(world: World, runtime: Runtime) -> dict[str, str]:
    """ana's private benchmark with a run by ana (on the board), pia and cole each."""
    ana, pia, sam = (world.user(f"{n}@example.com") for n in ("ana", "pia", "sam"))
    cole = world.user("cole@example.com")
    bm = world.benchmark(ana, {**MCQ, "title": TITLE})
    world.collaborator(ana, bm, "cole@example.com")
    world.do(Principal.web(ana), members.add_whitelist_entries, bm, ["pia@example.com"])
    world.do(Principal.web(pia), members.join_benchmark, bm, True)
    runs = {
        name: world.do(Principal.web(who), launch.start_run, bm, "mdl_builtin_first").id
        for name, who in (("ana_run", ana), ("pia_run", pia), ("cole_run", cole))
    }
    work_all(runtime)
    world.do(Principal.web(ana), leaderboards.add_to_leaderboard, runs["ana_run"])
    world.do(Principal.web(ana), members.remove_collaborator, bm, cole)
    return {"bm": bm, "ana": ana, "pia": pia, "cole": cole, "sam": sam, **runs}


def _api_paths(ids: dict[str, str]) -> dict[str, str]:
    return {
        "key": f"/api/v1/benchmarks/{ids['bm']}/export",
        "board": f"/api/v1/benchmarks/{ids['bm']}/leaderboard/export",
        **{run: f"/api/v1/runs/{ids[run]}/export?format=csv" for run in FILES[2:]},
    }


def _web_paths(ids: dict[str, str]) -> dict[str, str]:
    return {
        "key": f"/benchmarks/{ids['bm']}/export/jsonl",
        "board": f"/benchmarks/{ids['bm']}/leaderboard/download/csv",
        **{run: f"/runs/{ids[run]}/download/csv" for run in FILES[2:]},
    }


def _getter(
    door: str, client: TestClient, world: World, person: str, user_id: str
) -> Callable[[str], Response]:
    if door == "api":
        auth = bearer(world.token(user_id, ["read"]))
        return lambda path: client.get(path, headers=auth)
    client.cookies.clear()
    return WebUser.sign_in(client, f"{person}@example.com").get


@pytest.mark.parametrize("door", ["api", "web"])
def test_each_person_downloads_only_what_they_may_see(
    client: TestClient, world: World, runtime: Runtime, door: str
) -> None:
    ids = _private_benchmark(world, runtime)
    paths = _api_paths(ids) if door == "api" else _web_paths(ids)
    client.follow_redirects = False  # as a browser's sign-in sees it
    for person, allowed in ALLOWED.items():
        get = _getter(door, client, world, person, ids[person])
        got = {name: get(paths[name]) for name in FILES}
        assert tuple(got[name].status_code for name in FILES) == allowed, person
        for name, response in got.items():
            if response.status_code == 200:
                assert SAFE_NAME.fullmatch(response.headers["content-disposition"]), name
                # Kept by a shared browser or proxy, an answer key outlives the session.
                assert response.headers["cache-control"] == "no-store", name
        # Only the team sees which answers were right and what the key expects.
        for run in ("pia_run", "cole_run"):
            if got[run].status_code == 200:
                header = got[run].text.splitlines()[0]
                assert ("expected" in header) == (person == "ana"), (person, run)
