"""Fixtures of the client tests: the app, served in this process."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from benchgen.app import create_app
from benchgen.services.runtime import Runtime


@pytest.fixture
def server(runtime: Runtime) -> Iterator[TestClient]:
    """The app on the test's database, with its lifespan run."""
    with TestClient(create_app(runtime.settings, runtime)) as test_client:
        yield test_client
