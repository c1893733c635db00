"""`benchgen demo`: the token it prints carries every scope, so the demo can use every door."""

import pytest
from typer.testing import CliRunner

from benchgen.cli import app
from benchgen.cli.demo import DEMO_EMAIL as DEMO
from benchgen.core.errors import NotFound
from benchgen.core.permissions import ALL_SCOPES
from benchgen.services.accounts import users
from benchgen.services.benchmarks import lifecycle, scoring
from tests.support import OPERATOR, World

runner = CliRunner()


pytestmark = pytest.mark.usefixtures("cli_env")


def test_the_demo_token_holds_every_scope_and_can_publish(world: World) -> None:
    result = runner.invoke(app, ["demo"])
    assert result.exit_code == 0, result.output
    secret = next(line for line in result.output.splitlines() if line.startswith("bgp_"))
    principal = world.api(secret)
    assert principal.scopes == ALL_SCOPES
    demo = world.do(principal, lifecycle.list_benchmarks, True)[0]
    published = world.do(principal, lifecycle.publish_benchmark, demo.id)
    assert published.visibility == "published"


def test_the_qa_demo_scores_sentences_with_includes(world: World) -> None:
    assert runner.invoke(app, ["demo"]).exit_code == 0
    ana = world.api(world.token(world.do(OPERATOR, users.get_user_by_email, DEMO).id, ["read"]))
    found = {b.format: b.id for b in world.do(ana, lifecycle.list_benchmarks, True)}
    # A small model answers "The capital of Australia is Canberra."; exact match scored it 0 %.
    assert world.do(ana, scoring.get_scoring, found["qa"])["method"] == "includes"
    assert world.do(ana, scoring.get_scoring, found["mcq"])["method"] == "choice"


def test_the_demo_prints_the_public_url(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BENCHGEN_PUBLIC_URL", "https://bench.example/")
    result = runner.invoke(app, ["demo"])
    assert result.exit_code == 0, result.output
    assert result.output.startswith("BenchGen demo: https://bench.example  ·")
    assert "https://bench.example/api/v1/me" in result.output
    assert "8000" not in result.output


def test_the_demo_says_its_url_is_only_the_servers_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("BENCHGEN_PUBLIC_URL", raising=False)
    result = runner.invoke(app, ["demo"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0].startswith("BenchGen demo: http://127.0.0.1:8000  ·")
    assert lines[1].startswith("(`benchgen serve`'s default address: if the server listens")


def test_the_demo_prints_the_url_it_is_given(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BENCHGEN_PUBLIC_URL", "https://bench.example")
    result = runner.invoke(app, ["demo", "--url", "http://10.0.0.5:9000"])
    assert result.exit_code == 0, result.output
    assert result.output.startswith("BenchGen demo: http://10.0.0.5:9000  ·")
    assert "default address" not in result.output


def test_the_demo_refuses_an_address_before_it_makes_a_token(world: World) -> None:
    for wrong in ("not a url", "127.0.0.1:8000", "http://"):
        result = runner.invoke(app, ["demo", "--url", wrong])
        # It made the account and a token, and printed a `curl` line that could not work.
        assert result.exit_code == 2 and "--url" in result.output, result.output
        assert "bgp_" not in result.output
    with pytest.raises(NotFound):
        world.do(OPERATOR, users.get_user_by_email, DEMO)
