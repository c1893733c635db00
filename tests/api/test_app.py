"""The server's wiring: health, bearer auth, the error envelope, reading benchmarks."""

import pytest
from fastapi.testclient import TestClient

from benchgen.services.accounts import tokens
from tests.support import OPERATOR, World


def _auth(secret: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {secret}"}


def test_healthz(client: TestClient) -> None:
    assert client.get("/healthz").json() == {"status": "ok", "database": "ok"}


@pytest.mark.parametrize(
    ("header", "message"),
    [
        (None, "Send a personal API token"),
        ("Bearer nonsense", "malformed"),
        ("Bearer bgp_" + "A" * 38, "checksum"),
    ],
)
def test_bad_credentials_get_401_envelope(
    client: TestClient, header: str | None, message: str
) -> None:
    response = client.get("/api/v1/me", headers={"Authorization": header} if header else {})
    assert response.status_code == 401
    assert response.headers["WWW-Authenticate"] == "Bearer"
    error = response.json()["error"]
    assert error["code"] == "unauthenticated"
    assert message in error["message"]


def test_me_shows_user_balance_and_scopes(client: TestClient, world: World) -> None:
    ana = world.user("ana@example.com", credits_=42)
    secret = world.token(ana, ["read", "runs"])
    body = client.get("/api/v1/me", headers=_auth(secret)).json()
    assert (body["email"], body["credits"], body["scopes"]) == (
        "ana@example.com",
        42,
        ["read", "runs"],
    )
    assert body["token_expires_at"].endswith(("Z", "+00:00"))
    assert body["is_admin"] is False


def test_me_says_whether_the_user_is_an_administrator(client: TestClient, world: World) -> None:
    root = world.user("root@example.com", admin=True)
    body = client.get("/api/v1/me", headers=_auth(world.token(root, ["read"]))).json()
    assert (body["email"], body["is_admin"]) == ("root@example.com", True)


def test_turn_credentials_are_refused_by_the_api(client: TestClient, world: World) -> None:
    ana = world.user("ana@example.com")
    parent = world.api(world.token(ana, ["read"]))
    from datetime import timedelta

    from benchgen.core.permissions import Scope

    secret = world.do(
        parent, tokens.mint_turn_credential, "turn_x", frozenset({Scope.READ}), timedelta(minutes=1)
    )
    assert client.get("/api/v1/me", headers=_auth(secret)).status_code == 401


def test_revoked_token_stops_working(client: TestClient, world: World) -> None:
    ana = world.user("ana@example.com")
    secret = world.token(ana, ["read"])
    assert client.get("/api/v1/me", headers=_auth(secret)).status_code == 200
    token_id = world.api(secret).token_id
    world.do(OPERATOR, tokens.revoke_token, token_id)
    response = client.get("/api/v1/me", headers=_auth(secret))
    assert response.status_code == 401
    assert "revoked" in response.json()["error"]["message"]


@pytest.mark.both_backends
def test_benchmarks_visibility_and_paging(client: TestClient, world: World) -> None:
    ana, bob = world.user("ana@example.com"), world.user("bob@example.com")
    first, second = world.benchmark(ana), world.benchmark(ana)
    ana_token, bob_token = world.token(ana, ["read"]), world.token(bob, ["read"])
    page = client.get("/api/v1/benchmarks?limit=1", headers=_auth(ana_token)).json()
    assert len(page["items"]) == 1 and page["next_cursor"]
    rest = client.get(
        "/api/v1/benchmarks",
        params={"limit": 1, "cursor": page["next_cursor"]},
        headers=_auth(ana_token),
    ).json()
    assert {page["items"][0]["id"], rest["items"][0]["id"]} == {first, second}
    assert rest["next_cursor"] is None
    assert client.get("/api/v1/benchmarks", headers=_auth(bob_token)).json()["items"] == []
    hidden = client.get(f"/api/v1/benchmarks/{first}", headers=_auth(bob_token))
    assert hidden.status_code == 404
    assert hidden.json()["error"]["code"] == "not_found"


def test_framework_errors_use_the_envelope(client: TestClient, world: World) -> None:
    secret = world.token(world.user("ana@example.com"), ["read"])
    missing = client.get("/api/v1/nowhere", headers=_auth(secret))
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "not_found"
    # Not "Not Found" alone: a client at the wrong address learns what was not found.
    assert missing.json()["error"]["message"].startswith("No such API route: /api/v1/nowhere;")
    wrong_method = client.delete("/api/v1/me", headers=_auth(secret))
    assert wrong_method.status_code == 405
    assert wrong_method.json()["error"]["code"] == "method_not_allowed"
    invalid = client.get("/api/v1/benchmarks?limit=0", headers=_auth(secret))
    assert invalid.status_code == 422
    assert invalid.json()["error"]["details"]["errors"][0]["loc"] == ["query", "limit"]


def test_openapi_is_served(client: TestClient) -> None:
    spec = client.get("/api/v1/openapi.json").json()
    assert "/api/v1/me" in spec["paths"]
    reference = client.get("/api/docs")
    assert reference.status_code == 200 and 'data-openapi="/api/v1/openapi.json"' in reference.text
    assert "://" not in reference.text, "the reference must load nothing from elsewhere"
    assert "<script>" not in reference.text, "no inline script: the policy refuses it"


@pytest.mark.both_backends
def test_a_cursor_of_non_ascii_digits_is_a_clear_422(client: TestClient, world: World) -> None:
    secret = world.token(world.user("ana@example.com"), ["read"])
    response = client.get("/api/v1/benchmarks?cursor=%E2%93%B9", headers=_auth(secret))
    assert response.status_code == 422
    assert response.json()["error"]["details"]["errors"][0]["loc"] == ["query", "cursor"]
