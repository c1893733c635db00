"""413 and 503 answers become `TooLarge` and `Unavailable`, with the limit and the wait."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any

import httpx
import pytest

from benchgen.client import BenchGen, ClientError, ServerError, TooLarge, Unavailable


def _canned(handler: Callable[[httpx.Request], httpx.Response]) -> BenchGen:
    return BenchGen("http://bench.test", "bgp_x", transport=httpx.MockTransport(handler))


def _error(
    status: int, code: str, headers: dict[str, str] | None = None, **details: Any
) -> httpx.Response:
    body = {"error": {"code": code, "message": f"{code}!", "details": details}}
    return httpx.Response(status, json=body, headers=headers)


def _raised(response: httpx.Response) -> ClientError:
    with _canned(lambda _: response) as bg, pytest.raises(ClientError) as caught:
        bg.create_benchmark("t", "qa", [{"prompt": "p", "answer": "a"}])
    return caught.value


def test_too_large_carries_the_limit() -> None:
    # What the server's body limit answers (benchgen.api.limits).
    caught = _raised(_error(413, "too_large", limit_bytes=2_097_152))
    assert type(caught) is TooLarge
    assert (caught.status, caught.code, caught.limit_bytes) == (413, "too_large", 2_097_152)


def test_too_large_from_a_proxy_is_known_by_its_status() -> None:
    caught = _raised(httpx.Response(413, text="<html>Request Entity Too Large</html>"))
    assert type(caught) is TooLarge and caught.limit_bytes is None
    assert caught.code == "http_error" and "Too Large" in caught.message


def test_unavailable_waits_as_the_header_says() -> None:
    busy = _error(503, "unavailable", headers={"Retry-After": "3"}, retry_after=1)
    caught = _raised(busy)
    assert type(caught) is Unavailable and caught.retry_after == 3  # the header wins
    assert isinstance(caught, ServerError)  # code catching ServerError still catches it
    assert caught.details == {"retry_after": 1}


def test_unavailable_falls_back_to_the_envelope_without_the_header() -> None:
    caught = _raised(_error(503, "unavailable", retry_after=2))
    assert type(caught) is Unavailable and caught.retry_after == 2


def test_unavailable_reads_an_http_date() -> None:
    later = datetime.now(UTC) + timedelta(seconds=120)
    caught = _raised(
        _error(503, "unavailable", headers={"Retry-After": format_datetime(later, usegmt=True)})
    )
    assert isinstance(caught, Unavailable) and caught.retry_after is not None
    assert 110 <= caught.retry_after <= 120


@pytest.mark.parametrize(
    "response",
    [
        pytest.param(httpx.Response(503, text="Service Unavailable"), id="proxy"),
        pytest.param(_error(503, "unavailable", retry_after="soon"), id="unreadable"),
    ],
)
def test_unavailable_without_a_wait(response: httpx.Response) -> None:
    caught = _raised(response)
    assert type(caught) is Unavailable and caught.retry_after is None


def test_other_server_failures_stay_server_errors() -> None:
    for response in (_error(500, "internal"), httpx.Response(502, text="Bad gateway")):
        assert type(_raised(response)) is ServerError


def test_an_answer_that_is_not_json_is_a_client_error_saying_so() -> None:
    """A redirect (an empty id) or a --url that is not BenchGen raised a bare JSONDecodeError,
    and an HTML error page became a message of fourteen lines."""

    def answer(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/benchmarks/"):
            return httpx.Response(307, headers={"location": "/api/v1/benchmarks"})
        if request.url.path.endswith("/html"):
            return httpx.Response(200, text="<!DOCTYPE html><p>Sign in</p>")
        html = {"content-type": "text/html"}
        return httpx.Response(404, text="<!DOCTYPE html>\n<h1>Not here</h1>", headers=html)

    bg = _canned(answer)
    for path in ("/benchmarks/", "/html"):
        with pytest.raises(ClientError, match="is it a BenchGen server") as caught:
            bg._json("GET", path)
        assert caught.value.code == "bad_response"
    with pytest.raises(ClientError) as missing:
        bg._json("GET", "/elsewhere")
    assert missing.value.status == 404 and "<" not in missing.value.message


def test_the_training_log_is_read_to_its_end() -> None:
    """Only its first page came back: a long job's end was never seen."""
    asked: list[str] = []

    def answer(request: httpx.Request) -> httpx.Response:
        after = int(request.url.params["after"])
        limit = int(request.url.params["limit"])
        asked.append(str(after))
        ids = range(after + 1, min(after + limit, 7_000) + 1)
        items = [{"id": n, "at": "", "line": f"step {n}"} for n in ids]
        return httpx.Response(200, json={"items": items})

    lines = _canned(answer).training_log("tr_1")
    assert [line["id"] for line in lines] == list(range(1, 7_001))
    assert asked == ["0", "5000"]


def test_a_read_answered_503_is_asked_again_a_write_is_not(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Waiting for a run or paging a list ended at one 503 on the way (a busy database or a
    proxy), though such an answer changed nothing."""
    import benchgen.client.connection as connection

    slept: list[float] = []
    monkeypatch.setattr(connection.time, "sleep", slept.append)
    seen: list[str] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request.method)
        if len(seen) <= 2 or request.method == "POST":
            return _error(503, "unavailable", headers={"Retry-After": "60"})
        return httpx.Response(200, json={"id": "bm_1", "title": "T"})

    bg = _canned(answer)
    assert bg._json("GET", "/benchmarks/bm_1")["id"] == "bm_1"
    assert seen == ["GET"] * 3 and slept == [10, 10]  # waits as told, at most 10 s each
    with pytest.raises(Unavailable):
        bg.create_benchmark("t", "qa", [{"prompt": "p", "answer": "a"}])
    assert seen[3:] == ["POST"]
    seen.clear()
    always = _canned(lambda request: seen.append(request.method) or _error(503, "unavailable"))
    with pytest.raises(Unavailable):
        always._json("GET", "/runs")
    assert len(seen) == connection.GET_ATTEMPTS
