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
