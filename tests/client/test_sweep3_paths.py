"""Ids go into request paths as they are given: never read as steps of the path."""

from __future__ import annotations

import httpx
import pytest

from benchgen.client import BenchGen, NotFound


def test_an_id_of_dots_is_sent_as_that_id_not_as_a_step_of_the_path() -> None:
    asked: list[str] = []

    def answer(request: httpx.Request) -> httpx.Response:
        asked.append(request.url.raw_path.decode())
        body = {"error": {"code": "not_found", "message": "No such run.", "details": {}}}
        return httpx.Response(404, json=body)

    with BenchGen("http://bench.test", "bgp_x", transport=httpx.MockTransport(answer)) as bg:
        for dots in (".", "..", "run_.x"):
            with pytest.raises(NotFound):
                bg.run(dots)
    # `/runs/.` went out as `/runs/`, which answered the list of runs as if it were one run.
    assert asked == ["/api/v1/runs/%2E", "/api/v1/runs/%2E%2E", "/api/v1/runs/run_%2Ex"]


def test_the_servers_address_is_used_without_the_blanks_around_it() -> None:
    asked: list[str] = []

    def answer(request: httpx.Request) -> httpx.Response:
        asked.append(str(request.url))
        return httpx.Response(200, json={"id": "usr_x"})

    # Read from a file it keeps its line end (refused as unreadable); pasted, a space (sent
    # as the path `/%20/api/v1/…`).
    for address in ("http://bench.test\n", " http://bench.test/ "):
        with BenchGen(address, "bgp_x", transport=httpx.MockTransport(answer)) as bg:
            bg.me()
    assert asked == ["http://bench.test/api/v1/me"] * 2


def test_an_address_with_a_query_is_refused_without_being_repeated() -> None:
    # From a browser's address bar: the calls' paths went after the query, and the CLI said
    # the server "redirects to /signin?…; give https:// rather than http://".
    for address in ("http://bench.test/?next=%2Fsecret", "http://bench.test#top"):
        with pytest.raises(ValueError, match=r"without a \?… or #… part") as refused:
            BenchGen(address, "bgp_x")
        assert "secret" not in str(refused.value) and "top" not in str(refused.value)
