"""Fixtures for page tests: an app on the test runtime and signed-in browsers-in-a-client."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from benchgen.app import create_app
from benchgen.services.runtime import Runtime
from tests.support import World
from tests.web.support import WebUser


@pytest.fixture
def app_client(runtime: Runtime) -> Iterator[TestClient]:
    """A client with no session (follows no redirects, so tests see them)."""
    with TestClient(create_app(runtime.settings, runtime), follow_redirects=False) as client:
        yield client


@pytest.fixture
def signed_in(runtime: Runtime, world: World) -> Iterator[WebUser]:
    """Ana, signed in through the sign-in form (her own client and cookies)."""
    world.user("ana@example.com", credits_=1000)
    with TestClient(create_app(runtime.settings, runtime), follow_redirects=False) as client:
        yield WebUser.sign_in(client, "ana@example.com")
