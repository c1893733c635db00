"""A token without the scope a route needs: a 403 that names that scope, and nothing changed.

The valid requests come from the authorization matrix (`test_matrix.ROUTES`), so a new route is
covered here as soon as it has its matrix row."""

from __future__ import annotations

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy import func, select

from benchgen.db.tables import ApiToken, Base
from benchgen.services.runtime import Runtime
from tests.api.test_matrix import (  # noqa: F401 - the matrix's fixtures, used by name
    ALL_SCOPES,
    ROUTES,
    Seed,
    _send,
    api_routes,
    app,
    client,
    seed,
    seeded,
)
from tests.support import World

# Tables a refused request may still touch: the token's last use is recorded once it is valid.
_USE = {ApiToken.__tablename__}


def _counts(runtime: Runtime) -> dict[str, int]:
    """Rows per table: a refused request must leave every count as it was."""
    with runtime.database.engine.connect() as connection:
        return {
            table.name: connection.execute(select(func.count()).select_from(table)).scalar_one()
            for table in Base.metadata.sorted_tables
            if table.name not in _USE
        }


SCOPED = sorted(key for key in ROUTES if key[0] != "HEAD")


@pytest.mark.parametrize("route", SCOPED, ids=lambda key: f"{key[0]} {key[1]}")
def test_a_missing_scope_is_named_and_changes_nothing(
    route: tuple[str, str],
    app: FastAPI,  # noqa: F811
    client: TestClient,  # noqa: F811
    world: World,
    runtime: Runtime,
    seed: Seed,  # noqa: F811
) -> None:
    scope = api_routes(app)[route]
    if scope is None:
        pytest.skip("the route needs no scope")
    lacking = world.token(seed.ana, [name for name in ALL_SCOPES if name != scope])
    before = _counts(runtime)
    response = _send(client, ROUTES[route].build(seed), {"Authorization": f"Bearer {lacking}"})
    assert response.status_code == 403, response.text
    error = response.json()["error"]
    assert error["code"] == "permission_denied"
    assert f"'{scope}' scope" in error["message"], error["message"]
    assert _counts(runtime) == before
