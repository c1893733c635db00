"""Two people editing one benchmark through the client: the server's ETag and If-Match were out
of its reach (no call sent If-Match, every read dropped the tag), so the last save always won
over the other's; and an address without http:// was accepted, to fail at the first call."""

from __future__ import annotations

import httpx
import pytest
from fastapi.testclient import TestClient

from benchgen.client import BenchGen, Conflict, NotFound, Stale, as_input
from benchgen.client import benchmarks as benchmark_calls
from tests.client.relay import URL, connect
from tests.support import World

MORE = {"prompt": "Capital of Italy?", "answer": "Rome"}


def test_a_change_made_from_an_older_read_is_refused_as_stale(
    server: TestClient, world: World
) -> None:
    ana = world.user("ana@example.com")
    bm = world.benchmark(ana)
    secret = world.token(ana, ["read", "edit"])
    with connect(server, secret) as first, connect(server, secret) as second:
        read = [as_input(q) for q in first.questions(bm)]
        tag = first.etag
        assert tag is not None
        second.change_benchmark(bm, title="Capitals (theirs)")
        # Sent without a tag, this saved over the other's title, unseen.
        with pytest.raises(Stale) as refused:
            first.change_benchmark(bm, title="Capitals (mine)", questions=read, if_match=tag)
        stale = refused.value
        assert isinstance(stale, Conflict) and stale.status == 412
        assert stale.changed == ["title"] and stale.details["title"] == "Capitals (theirs)"
        assert first.get_benchmark(bm)["title"] == "Capitals (theirs)"
        assert stale.etag == first.etag
        # Read again, the change goes through, and its answer's tag serves the next one.
        first.change_benchmark(bm, questions=[*read, MORE], if_match=first.etag)
        assert first.etag is not None and first.etag != stale.etag
        edited = first.change_benchmark(bm, title="Capitals (both)", if_match=first.etag)
    assert edited["benchmark"]["title"] == "Capitals (both)"


def test_a_preview_gives_the_tag_of_the_state_it_was_made_on(
    server: TestClient, world: World
) -> None:
    ana = world.user("ana@example.com")
    bm = world.benchmark(ana)
    with connect(server, world.token(ana, ["read", "edit"])) as bg:
        bg.preview_change(bm, description="Europe and Asia")
        previewed = bg.etag
        bg.change_benchmark(bm, title="Capitals v2")
        with pytest.raises(Stale):
            bg.change_benchmark(bm, description="Europe and Asia", if_match=previewed)


def test_a_failed_read_keeps_the_tag_a_change_is_guarded_by(
    server: TestClient, world: World
) -> None:
    ana = world.user("ana@example.com")
    bm = world.benchmark(ana)
    secret = world.token(ana, ["read", "edit"])
    with connect(server, secret) as bg, connect(server, secret) as other:
        bg.get_benchmark(bm)
        with pytest.raises(NotFound):
            bg.get_benchmark("bm_missing")
        other.change_benchmark(bm, title="Capitals (theirs)")
        # Emptied, the change below would have been sent unguarded and saved over theirs.
        with pytest.raises(Stale):
            bg.change_benchmark(bm, title="Capitals (mine)", if_match=bg.etag)


def test_questions_read_across_a_change_keep_the_older_tag(
    server: TestClient, world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    ana = world.user("ana@example.com")
    bm = world.benchmark(ana)
    secret = world.token(ana, ["read", "edit"])
    monkeypatch.setattr(benchmark_calls, "_QUESTIONS_PAGE", 1)  # two pages
    pages: list[str] = []

    def renamed_after_the_first_page(request: httpx.Request) -> httpx.Response:
        answer = server.request(
            request.method, str(request.url), headers=request.headers, content=request.content
        )
        if request.url.path.endswith("/questions"):
            pages.append(answer.headers["ETag"])
            if len(pages) == 1:
                with connect(server, secret) as other:
                    other.change_benchmark(bm, title="Capitals (renamed)")
        return httpx.Response(answer.status_code, headers=answer.headers, content=answer.content)

    transport = httpx.MockTransport(renamed_after_the_first_page)
    with BenchGen(URL, secret, transport=transport) as bg:
        bg.questions(bm)
        assert len(pages) == 2 and pages[0] != pages[1]
        # The last page's tag would name a state the first page was never read in.
        assert bg.etag == pages[0]
        with pytest.raises(Stale):
            bg.change_benchmark(bm, title="Capitals (mine)", if_match=bg.etag)


def test_a_tag_no_header_can_carry_is_refused_unsent() -> None:
    def unsent(request: httpx.Request) -> httpx.Response:
        raise AssertionError(f"sent {request.url}")

    with BenchGen(URL, "bgp_x", transport=httpx.MockTransport(unsent)) as bg:
        # httpx's UnicodeEncodeError ("'ascii' codec can't encode"), or a broken connection.
        for tag in ('"1-ténor"', '"1-a-b"\n'):
            with pytest.raises(ValueError, match="holds characters no ETag has"):
                bg.change_benchmark("bm_1", title="t", if_match=tag)


@pytest.mark.parametrize("address", ["127.0.0.1:8000", "localhost:8000", "ftp://bench.test", ""])
def test_an_address_without_http_is_refused_at_once(address: str) -> None:
    def unsent(request: httpx.Request) -> httpx.Response:
        raise AssertionError(f"sent {request.url}")

    # Accepted, every call then raised Unreachable ("cannot send to 127.0.0.1:8000").
    with pytest.raises(ValueError, match=r"with http:// or https:// at its start"):
        BenchGen(address, "bgp_x", transport=httpx.MockTransport(unsent))


def test_an_address_without_a_host_is_refused_at_once() -> None:
    for address in ("http://", "https:///api/v1"):
        with pytest.raises(ValueError, match="with a host after http:// or https://"):
            BenchGen(address, "bgp_x")
