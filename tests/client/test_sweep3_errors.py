"""A failure that is not BenchGen's error envelope names where it came from and what to check."""

from __future__ import annotations

import socketserver
import threading

import httpx
import pytest

from benchgen.client import BadResponse, BenchGen, ClientError, Unreachable

PAGE = {"content-type": "text/html; charset=utf-8"}


def _failure(response: httpx.Response, url: str = "http://bench.test") -> ClientError:
    with (
        BenchGen(url, "bgp_x", transport=httpx.MockTransport(lambda _: response)) as bg,
        pytest.raises(ClientError) as caught,
    ):
        bg.list_benchmarks()
    return caught.value


def test_a_page_not_found_names_the_address_asked_and_says_to_give_the_servers_own() -> None:
    # A --url copied from the browser: the web app's page answered, and the CLI said only
    # "Error: Not Found".
    said = _failure(httpx.Response(404, text="<p>Not here</p>", headers=PAGE), "http://h/dash")
    assert said.message.startswith("http://h/dash/api/v1/benchmarks answered 404 Not Found;")
    assert "server's own address" in said.message and "?" not in said.message


def test_a_proxys_failure_says_it_failed_and_to_try_again_later() -> None:
    said = _failure(httpx.Response(500, text="<html>oops</html>", headers=PAGE))
    assert "answered 500 Internal Server Error;" in said.message
    assert "try again later" in said.message and "oops" not in said.message
    # Plain words are kept, once.
    said = _failure(httpx.Response(502, text="upstream timed out"))
    assert "502 Bad Gateway (upstream timed out);" in said.message
    said = _failure(httpx.Response(502, text="Bad Gateway"))
    assert said.message.count("Bad Gateway") == 1


def test_json_that_is_not_a_page_of_a_list_is_a_bad_response() -> None:
    # An OpenAI-compatible server (vLLM listens on 8000 too) answers any path with JSON: the
    # lists raised KeyError, a traceback in the CLI.
    other = httpx.Response(200, json={"object": "list", "data": []})
    with BenchGen("http://h", "bgp_x", transport=httpx.MockTransport(lambda _: other)) as bg:
        for call in (bg.list_benchmarks, lambda: bg.log("run_x"), lambda: bg.training_log("t")):
            with pytest.raises(BadResponse, match="is it a BenchGen server"):
                call()


def test_https_to_a_server_that_speaks_plain_http_says_to_give_http() -> None:
    # `benchgen serve` speaks plain HTTP; https:// to it said "[SSL: WRONG_VERSION_NUMBER]".
    with socketserver.TCPServer(("127.0.0.1", 0), _Plain) as plain:
        threading.Thread(target=plain.serve_forever, daemon=True).start()
        try:
            port = plain.server_address[1]
            with (
                BenchGen(f"https://127.0.0.1:{port}", "bgp_x") as bg,
                pytest.raises(Unreachable) as caught,
            ):
                bg.me()
        finally:
            plain.shutdown()
    assert caught.value.message.endswith(f"give http://127.0.0.1:{port} instead")


class _Plain(socketserver.StreamRequestHandler):
    """Answers whatever comes in plain HTTP, as a server without TLS does."""

    def handle(self) -> None:
        self.rfile.read(1)
        self.wfile.write(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
