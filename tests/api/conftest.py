"""The API's tests: a client of the app on the test's own runtime."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from benchgen.app import create_app
from benchgen.services.runtime import Runtime


@pytest.fixture
def client(runtime: Runtime) -> Iterator[TestClient]:
    """The app with its lifespan started; a module needing other settings defines its own."""
    with TestClient(create_app(runtime.settings, runtime)) as test_client:
        yield test_client


@pytest.fixture
def local_models(runtime: Runtime) -> None:
    """Model endpoints on 127.0.0.1 (the tests' stubs) allowed, as an operator's allow-list
    would; a module asks for it before its client (`pytest.mark.usefixtures`)."""
    runtime.settings = runtime.settings.model_copy(update={"model_host_allowlist": "127.0.0.1"})
