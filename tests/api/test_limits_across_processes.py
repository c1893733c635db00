"""Limits live in the database, so they hold across web processes: two `benchgen serve`
processes on one PostgreSQL database take a burst of requests together and still let through
exactly what one would — three benchmark creations a minute, a stranger's five runs a day,
five wrong passwords for one account."""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from benchgen.core.context import Principal
from benchgen.services.benchmarks import lifecycle
from benchgen.services.runtime import Runtime
from tests.processes import Deployment, serve_together
from tests.support import MCQ, World
from tests.web.support import PASSWORD, csrf_of


@pytest.fixture
def two_servers(runtime: Runtime) -> Iterator[tuple[str, str]]:
    first, second = Deployment(runtime), Deployment(runtime)
    try:
        serve_together(first, second)
        yield first.url, second.url
    finally:
        first.stop()
        second.stop()


def _at_once(calls: list[Callable[[], int]]) -> list[int]:
    """Every call started at the same moment; their status codes, sorted."""
    barrier = threading.Barrier(len(calls))
    codes: list[int] = []
    lock = threading.Lock()

    def one(call: Callable[[], int]) -> None:
        barrier.wait(30)
        code = call()
        with lock:
            codes.append(code)

    threads = [threading.Thread(target=one, args=(call,)) for call in calls]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    return sorted(codes)


def _burst(calls: list[tuple[str, dict[str, Any], str]]) -> list[int]:
    """Every (url, body, token) POSTed at the same moment; their status codes."""

    def post(url: str, body: dict[str, Any], token: str) -> int:
        headers = {"Authorization": f"Bearer {token}"}
        return httpx.post(url, json=body, headers=headers, timeout=60).status_code

    return _at_once([functools.partial(post, *call) for call in calls])


class _SignInForm:
    """A browser on one server that has opened the sign-in form (cookie and CSRF token)."""

    def __init__(self, url: str) -> None:
        self.client = httpx.Client(base_url=url, timeout=60)
        self.csrf = csrf_of(self.client.get("/signin").text)

    def submit(self, password: str) -> int:
        form = {"email": "ana@example.com", "password": password, "csrf_token": self.csrf}
        return self.client.post("/signin", data=form).status_code


@pytest.mark.parametrize("backend", ["postgres"])
def test_three_creations_a_minute_across_two_servers(
    world: World, two_servers: tuple[str, str]
) -> None:
    token = world.token(world.user("ana@example.com"), ["create"], days=365)
    body = {"title": "Sums", "format": "qa", "questions": [{"prompt": "1+1?", "answer": "2"}]}
    calls = [(f"{two_servers[n % 2]}/api/v1/benchmarks", body, token) for n in range(8)]
    assert _burst(calls) == [201] * 3 + [429] * 5


@pytest.mark.parametrize("backend", ["postgres"])
def test_a_strangers_five_runs_a_day_across_two_servers(
    world: World, two_servers: tuple[str, str]
) -> None:
    owner = world.user("owner@example.com")
    bench = world.benchmark(owner, MCQ)
    world.do(Principal.web(owner), lifecycle.publish_benchmark, bench)
    token = world.token(world.user("stranger@example.com"), ["runs"], days=365)
    body = {"benchmark_id": bench, "model_id": "mdl_builtin_first"}
    calls = [(f"{two_servers[n % 2]}/api/v1/runs", body, token) for n in range(12)]
    assert _burst(calls) == [202] * 5 + [429] * 7


@pytest.mark.parametrize("backend", ["postgres"])
def test_five_wrong_passwords_for_an_account_across_two_servers(
    world: World, two_servers: tuple[str, str]
) -> None:
    world.user("ana@example.com")
    forms = [_SignInForm(two_servers[n % 2]) for n in range(12)]
    try:
        assert (
            _at_once([functools.partial(form.submit, "wrong") for form in forms])
            == [401] * 5 + [429] * 7
        )
        # The account is paused on both servers, even for the right password.
        assert [form.submit(PASSWORD) for form in forms[:2]] == [429, 429]
    finally:
        for form in forms:
            form.client.close()
