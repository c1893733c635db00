"""Through the API: models say which formats they answer, and a run that cannot be answered is
refused with the one error envelope."""

from fastapi.testclient import TestClient

from tests.support import QA, World

FIRST = "mdl_builtin_first"


def test_a_choice_only_baseline_on_qa_is_a_422(client: TestClient, world: World) -> None:
    ana = world.user("ana@example.com")
    auth = {"Authorization": f"Bearer {world.token(ana, ['read', 'runs'])}"}
    capitals = world.benchmark(ana, QA)
    listed = client.get("/api/v1/models", headers=auth).json()["items"]
    assert {m["id"]: m["formats"] for m in listed}[FIRST] == ["mcq"]
    started = client.post(
        "/api/v1/runs", json={"benchmark_id": capitals, "model_id": FIRST}, headers=auth
    )
    assert started.status_code == 422, started.text
    error = started.json()["error"]
    assert error["code"] == "invalid_input" and "answers only mcq" in error["message"]
    assert error["details"]["errors"][0]["loc"] == ["body", "model_id"]
    assert client.get("/api/v1/runs", headers=auth).json()["items"] == []
