"""What a `BenchGen` connection checks: the token before it sends anything, and that each answer
is one it can use."""

from __future__ import annotations

import httpx
import pytest

from benchgen.client import BadResponse, BenchGen


def test_a_token_is_sent_trimmed_and_an_unsendable_one_is_refused_unrepeated() -> None:
    sent: list[str] = []

    def answer(request: httpx.Request) -> httpx.Response:
        sent.append(request.headers["Authorization"])
        return httpx.Response(200, json={"id": "usr_x"})

    # A token read from a file keeps its line end: it was refused as a "broken connection".
    with BenchGen("http://bench.test", " bgp_x\r\n", transport=httpx.MockTransport(answer)) as bg:
        bg.me()
    assert sent == ["Bearer bgp_x"]
    for unsendable in ("bgp_x y", "bgp_tök", "bgp_x\x00"):
        with pytest.raises(ValueError, match="holds characters no token has") as refused:
            BenchGen("http://bench.test", unsendable)
        # httpx's own refusal quoted the header, and so the token, whole.
        assert unsendable not in str(refused.value)


def test_a_redirect_or_a_page_is_a_bad_response_for_calls_that_send_files_too() -> None:
    moved = httpx.Response(301, headers={"Location": "https://bench.test/api/v1/x"})
    page = httpx.Response(200, html="<html>Sign in</html>")
    for answer, said in ((moved, "redirects to https://bench.test/api/v1/x"), (page, "JSON")):
        canned = httpx.MockTransport(lambda _, answer=answer: answer)
        with BenchGen("http://bench.test", "bgp_x", transport=canned) as bg:
            # These read the answer as JSON themselves: a JSONDecodeError, a CLI traceback.
            with pytest.raises(BadResponse, match=said):
                bg.import_file(b'{"prompt": "p", "answer": "a"}\n', "t")
            with pytest.raises(BadResponse, match=said):
                bg.upload_dataset(b"{}", "d")
