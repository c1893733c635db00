"""The operator's CLI: accounts, credits, tokens, settings and the demo seed."""

import json
import socket
import time
from types import SimpleNamespace
from typing import Any

import pytest
from typer.testing import CliRunner

from benchgen.cli import app
from benchgen.cli import runs as cli_runs
from benchgen.core.config import Settings
from benchgen.core.context import Principal
from benchgen.core.errors import Unauthenticated
from benchgen.core.ids import token_prefix
from benchgen.services import models
from benchgen.services.accounts import _mail_queue, passwords, users
from benchgen.services.benchmarks import lifecycle, outbox
from benchgen.services.runs import launch
from tests.evals.stub_openai import StubOpenAI
from tests.processes import free_port
from tests.support import MCQ, OPERATOR, World

runner = CliRunner()


pytestmark = pytest.mark.usefixtures("cli_env")


def _ok(*args: str) -> str:
    result = runner.invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result.output


def test_help_explains_commands() -> None:
    text = _ok("--help")
    for command in ("serve", "demo", "db", "admin"):
        assert command in text
    assert "create-token" in _ok("admin", "--help")


@pytest.mark.both_backends
def test_accounts_credits_and_tokens(world: World) -> None:
    _ok("db", "upgrade")
    _ok(
        "admin",
        "create-user",
        "--email",
        "Ana@Example.com",
        "--password",
        "longpassword",
        "--credits",
        "50",
    )
    assert "now has 75 credits" in _ok("admin", "grant-credits", "--email", "ana@example.com", "25")
    printed = _ok(
        "admin",
        "create-token",
        "--email",
        "ana@example.com",
        "--scopes",
        "read,runs",
        "--expires-days",
        "30",
    )
    secret = printed.strip()
    assert printed == secret + "\n" and token_prefix(secret) == "bgp"
    principal = world.api(secret)
    assert principal.scopes == {"read", "runs"}
    listing = _ok("admin", "list-tokens", "--email", "ana@example.com")
    assert secret[-4:] in listing and secret not in listing
    _ok("admin", "revoke-token", str(principal.token_id))
    with pytest.raises(Unauthenticated, match="revoked"):
        world.api(secret)


def test_the_operator_disables_and_enables_an_account(world: World) -> None:
    ana = world.user("ana@example.com")
    secret = world.token(ana, ["read"])
    assert "ana@example.com is disabled." in _ok(
        "admin", "disable-user", "--email", "ana@example.com"
    )
    with pytest.raises(Unauthenticated):
        world.api(secret)
    # Acting as the account says it is disabled, and how to undo that (it said "the account is
    # disabled or the credential is no longer valid", for a credential nobody had given).
    for command in (["admin", "list-tokens", "--email"], ["models", "list", "--as"]):
        refused = runner.invoke(app, [*command, "ana@example.com"])
        assert refused.exit_code == 1
        assert "ana@example.com is disabled; `benchgen admin enable-user" in refused.output
    assert "ana@example.com is enabled." in _ok(
        "admin", "enable-user", "--email", "Ana@example.com"
    )
    assert world.do(Principal.web(ana), users.get_me).id == ana
    # Its tokens were revoked: listed with the time, at a pipe's 80 columns no cell cut to "…".
    listing = runner.invoke(app, ["admin", "list-tokens", "--email", "ana@example.com"])
    assert listing.exit_code == 0 and secret[-4:] in listing.output
    assert "…" not in listing.output


def test_the_operator_grants_and_revokes_admin_rights(world: World) -> None:
    world.user("ana@example.com")
    said = _ok("admin", "grant-admin", "--email", "ana@example.com")
    assert "ana@example.com is an administrator." in said
    assert world.do(OPERATOR, users.get_user_by_email, "ana@example.com").is_admin
    _ok("admin", "revoke-admin", "--email", "ana@example.com")
    assert not world.do(OPERATOR, users.get_user_by_email, "ana@example.com").is_admin


def test_errors_are_clear_and_exit_nonzero() -> None:
    result = runner.invoke(app, ["admin", "create-user", "--email", "bad", "--password", "x" * 9])
    assert result.exit_code == 2
    assert "email" in result.output
    result = runner.invoke(
        app, ["admin", "create-token", "--email", "nobody@example.com", "--scopes", "read"]
    )
    assert result.exit_code == 1 and "No account" in result.output


@pytest.mark.both_backends
def test_settings_override(world: World) -> None:
    assert "agent_allow_publish = False" in _ok("admin", "set", "agent_allow_publish", "off")
    assert "agent_allow_publish = False" in _ok("admin", "settings")
    assert runner.invoke(app, ["admin", "set", "agent_allow_publish", "maybe"]).exit_code == 1


@pytest.mark.both_backends
def test_demo_seeds_once_and_prints_a_working_token(world: World) -> None:
    first = _ok("demo")
    second = _ok("demo")
    assert "demo@example.com" in first and "benchgen-demo" in first
    secrets = [line for line in (first + second).splitlines() if line.startswith("bgp_")]
    assert len(secrets) == 2
    principal = world.api(secrets[1])
    views = world.do(principal, lifecycle.list_benchmarks, True)
    assert sorted(view.format for view in views) == ["mcq", "qa"]
    assert all(view.question_count == 20 for view in views)


def test_run_rescore_models_and_leaderboard_from_the_terminal(world: World) -> None:
    _ok("admin", "create-user", "--email", "ana@example.com", "--password", "longpassword")
    user = world.do(OPERATOR, lambda ctx: users.get_user_by_email(ctx, "ana@example.com"))
    bm = world.benchmark(user.id, MCQ)
    listing = _ok("models", "list", "--as", "ana@example.com")
    assert "mdl_builtin_first" in listing and "Baseline" in listing
    printed = _ok(
        "run", "--benchmark", bm, "--model", "mdl_builtin_first", "--as", "ana@example.com"
    )
    assert "completed: accuracy 50.0%" in printed
    run_id = printed.split("Run ")[1].split()[0]
    assert "Dry run: 0 answers would change" in _ok("rescore", run_id, "--as", "ana@example.com")
    applied = _ok("rescore", run_id, "--apply", "--as", "ana@example.com")
    assert "Applied: 0 answers changed; accuracy 0.5 → 0.5" in applied
    assert "Added" in _ok("leaderboard", "add", run_id, "--as", "ana@example.com")
    failed = runner.invoke(app, ["leaderboard", "add", run_id, "--as", "ana@example.com"])
    assert failed.exit_code == 1 and "already" in failed.output


def test_run_takes_every_setting_the_api_takes(world: World) -> None:
    ana = world.user("ana@example.com", credits_=1000)
    five = [{"prompt": f"{n}?", "choices": ["yes", "no"], "answer": "A"} for n in range(5)]
    bm = world.benchmark(ana, {"title": "Five", "format": "mcq", "questions": five})
    world.rt.settings.model_host_allowlist = "127.0.0.1"
    spec = {"name": "Hosted", "endpoint_model": "m", "base_url": "http://127.0.0.1:9/v1"}
    model = world.do(OPERATOR, models.create_platform_model, spec).id
    chosen = ["--top-p", "0.5", "--max-tokens", "7", "--stop", "###", "--stop", "END"]
    chosen += ["--system-prompt", "Be brief.", "--few-shot", "1", "--step-by-step"]
    chosen += ["--random", "1", "--subset-seed", "3", "--no-wait"]
    printed = _ok("run", "--benchmark", bm, "--model", model, *chosen, "--as", "ana@example.com")
    run_id = printed.split("Run ")[1].split()[0]
    settings = world.do(Principal.web(ana), launch.get_run, run_id).settings
    assert {k: settings[k] for k in ("top_p", "max_tokens", "stop", "system_prompt")} == {
        "top_p": 0.5,
        "max_tokens": 7,
        "stop": ["###", "END"],
        "system_prompt": "Be brief.",
    }
    assert (settings["few_shot"], settings["chain_of_thought"]) == (1, "step_by_step")
    assert settings["subset"] == {"kind": "random", "n": 1, "seed": 3, "tags": []}
    both = runner.invoke(
        app,
        [
            "run",
            "--benchmark",
            bm,
            "--model",
            model,
            "--first",
            "1",
            "--tag",
            "x",
            "--as",
            "ana@example.com",
        ],
    )
    assert both.exit_code == 2 and "give one of --first, --random and --tag" in both.output
    runs_before = world.do(Principal.web(ana), launch.list_runs)
    # 0 questions read as "no subset": the whole benchmark ran, at its full price.
    for zero in (["--first", "0"], ["--random", "0"]):
        refused = runner.invoke(
            app, ["run", "--benchmark", bm, "--model", model, *zero, "--as", "ana@example.com"]
        )
        assert refused.exit_code == 2, refused.output
        assert refused.output.startswith(f"Error: {zero[0]}: "), refused.output
    # A retry takes the run's own settings: a cap or a subset beside it was dropped silently.
    retried = runner.invoke(
        app, ["run", "--retry", run_id, "--max-credits", "5", "--as", "ana@example.com"]
    )
    assert retried.exit_code == 2 and "leave out --max-credits" in retried.output
    assert world.do(Principal.web(ana), launch.list_runs) == runs_before


def test_ctrl_c_cancels_the_run_it_works_on_and_says_what_it_cost(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    ana = world.user("ana@example.com", credits_=500)
    many = [{"prompt": f"{n}?", "choices": ["yes", "no"], "answer": "A"} for n in range(200)]
    bm = world.benchmark(ana, {"title": "Many", "format": "mcq", "questions": many})
    monkeypatch.setenv("BENCHGEN_MODEL_HOST_ALLOWLIST", "127.0.0.1")
    monkeypatch.setenv("BENCHGEN_RUN_CONCURRENCY", "2")
    world.rt.settings.model_host_allowlist = "127.0.0.1"

    def sleep_then_ctrl_c(seconds: float) -> None:
        """The command's pause between polls, during which Ctrl-C comes once answers are in."""
        time.sleep(seconds)
        [run] = world.do(Principal.web(ana), launch.list_runs)
        if run.done_count >= 2:
            raise KeyboardInterrupt  # what Ctrl-C raises in the command's main thread

    monkeypatch.setattr(cli_runs, "time", SimpleNamespace(sleep=sleep_then_ctrl_c))
    with StubOpenAI(latency_s=0.05) as stub:
        spec = {"name": "Hosted", "endpoint_model": "m", "base_url": stub.base_url}
        spec["price_per_question"] = 2
        model = world.do(OPERATOR, models.create_platform_model, spec).id
        result = runner.invoke(
            app, ["run", "--benchmark", bm, "--model", model, "--as", "ana@example.com"]
        )
    # It went on answering all 200 questions (at 2 a time, 5 s), then exited 130 saying nothing
    # of them.
    assert result.exit_code == 130, result.output
    [run] = world.do(Principal.web(ana), launch.list_runs)
    assert run.status == "cancelled" and 2 <= run.done_count < 100
    assert run.cost == 2 * run.done_count
    assert f"Cancelling run {run.id}" in result.output
    assert f"cancelled ({run.done_count}/200 answered): accuracy" in result.output
    assert f"{run.cost} credits" in result.output


def test_a_run_cancelled_elsewhere_while_followed_exits_1(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    ana = world.user("ana@example.com")
    bm = world.benchmark(ana, MCQ)
    # No worker takes it: it stays queued until someone cancels it, between two polls.
    monkeypatch.setattr(cli_runs, "start_workers", lambda *_: [])

    def cancelled_in_the_web_app(_: float) -> None:
        [run] = world.do(Principal.web(ana), launch.list_runs)
        if run.status == "queued":
            world.do(Principal.web(ana), launch.cancel_run, run.id)

    monkeypatch.setattr(cli_runs, "time", SimpleNamespace(sleep=cancelled_in_the_web_app))
    command = ["run", "--benchmark", bm, "--model", "mdl_builtin_first", "--as", "ana@example.com"]
    result = runner.invoke(app, command)
    # It exited 0, as a completed run does.
    assert result.exit_code == 1, result.output
    assert "cancelled (0/" in result.output


@pytest.mark.parametrize(
    ("text", "said"), [("notjson", "not valid JSON"), ("[1]", "must be a JSON object")]
)
def test_rescore_says_what_is_wrong_with_its_scoring_json(text: str, said: str) -> None:
    result = runner.invoke(app, ["rescore", "run_x", "--as", "a@example.com", "--scoring", text])
    assert result.exit_code == 2 and said in result.output
    assert "Traceback" not in result.output and "JSONDecodeError" not in result.output


@pytest.mark.parametrize("url", ["foo://x", "http://broker:6379", "redis"])
def test_a_broker_that_is_not_redis_or_rabbitmq_is_refused_in_one_line(url: str) -> None:
    with pytest.raises(ValueError, match="must be a Redis or RabbitMQ URL"):
        Settings(broker_url=url)
    assert Settings(broker_url="AMQP://guest:guest@127.0.0.1:5672//").broker_url


def test_serve_refuses_a_brain_it_cannot_build(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BENCHGEN_AGENT_MODEL", "gpt-5")
    result = runner.invoke(app, ["serve", "--port", str(free_port())])
    assert result.exit_code == 2
    assert "Cannot start" in result.output and "BENCHGEN_AGENT_MODEL" in result.output


def test_serve_on_a_taken_port_says_so_before_anything_else(world: World) -> None:
    """Its banner said where it served, then uvicorn failed to listen there."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = runner.invoke(app, ["serve", "--port", str(port)])
    assert result.exit_code == 1 and f"cannot listen on 127.0.0.1:{port}" in result.output
    assert "BenchGen on" not in result.output


def test_the_operator_reads_a_reset_link_in_the_outbox(world: World) -> None:
    world.user("ana@example.com")
    world.do(
        Principal.system("signin", frozenset()),
        passwords.request_password_reset,
        "ana@example.com",
        "127.0.0.1",
    )
    message_id = world.ctx_call(OPERATOR, lambda ctx: outbox.list_outbox(ctx)[0].id)
    # The listing prints the id whole even at 80 columns: it is what --show takes.
    listing = runner.invoke(app, ["admin", "outbox"], env={"COLUMNS": "80"})
    assert listing.exit_code == 0 and message_id in listing.output, listing.output
    shown = _ok("admin", "outbox", "--show", message_id)
    assert "To: ana@example.com" in shown and "/password/reset/" in shown


def test_scoring_options_not_given_keep_their_values_until_the_method_changes(
    world: World,
) -> None:
    ana = world.user("ana@example.com")
    bm = world.benchmark(ana)

    def scoring(*args: str) -> dict[str, Any]:
        return dict(json.loads(_ok("scoring", bm, "--as", "ana@example.com", *args)))

    scoring("--method", "includes", "--option", "number_words=true")
    both = scoring("--option", "articles=false")["options"]
    assert (both["number_words"], both["articles"]) == (True, False)
    again = scoring("--method", "includes", "--option", "case=false")["options"]
    assert (again["number_words"], again["articles"], again["case"]) == (True, False, False)
    fresh = scoring("--method", "exact")
    assert fresh["method"] == "exact" and fresh["options"].get("number_words") is not True


def test_a_delivery_round_with_failures_says_so_and_exits_nonzero(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    world.ctx_call(OPERATOR, lambda ctx: _mail_queue.record_mail(ctx, "a@b.co", "Hi", "Body"))
    monkeypatch.setenv("BENCHGEN_SMTP_URL", "smtp://127.0.0.1:1")  # nothing listens there
    result = runner.invoke(app, ["admin", "outbox", "--deliver"])
    assert result.exit_code == 1
    text = " ".join(result.output.split())
    assert "Sent 0 message(s); 1 failed" in text
    # At 80 columns the error cell folds over lines: its words are there, not on one line.
    assert all(word in text for word in ("ConnectionRefusedErr", "Connection", "refused"))


def test_delivering_without_smtp_says_nothing_can_be_sent(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """It said "Sent 0 message(s)." and exited 0 while every message still waited."""
    world.ctx_call(OPERATOR, lambda ctx: _mail_queue.record_mail(ctx, "a@b.co", "Hi", "Body"))
    monkeypatch.delenv("BENCHGEN_SMTP_URL", raising=False)
    result = runner.invoke(app, ["admin", "outbox", "--deliver"])
    assert result.exit_code == 1 and "BENCHGEN_SMTP_URL is not set" in result.output
    assert "queued" in runner.invoke(app, ["admin", "outbox"], env={"COLUMNS": "200"}).output


def test_a_worker_whose_broker_gave_up_exits_nonzero_for_its_supervisor(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Celery gave up on a broker that restarted under a busy consumer and the command exited
    0: a supervisor restarting on failure left it dead, and queued jobs waited for ever."""
    from benchgen.jobs import broker

    monkeypatch.setenv("BENCHGEN_BROKER_URL", "redis://127.0.0.1:6379/15")
    monkeypatch.setattr(broker, "run_celery_worker", lambda runtime, queues, threads: 1)
    result = runner.invoke(app, ["worker"])
    assert result.exit_code == 1
    assert "lost its broker and stopped" in " ".join(result.output.split())
    monkeypatch.setattr(broker, "run_celery_worker", lambda runtime, queues, threads: 0)
    assert runner.invoke(app, ["worker"]).exit_code == 0


def test_a_worker_started_with_another_secret_key_warns_at_once(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Such a worker failed every run that needed a stored key, three attempts each, with a
    message that sent users to set their keys again."""
    from cryptography.fernet import Fernet

    from benchgen.jobs import broker

    ana = world.user("ana@example.com")
    world.rt.settings = world.rt.settings.model_copy(update={"model_host_allowlist": "127.0.0.1"})
    spec = {"name": "Keyed", "endpoint_model": "m", "base_url": "http://127.0.0.1:9/v1"}
    world.do(Principal.web(ana), models.create_model, {**spec, "api_key": "sk-123"})
    monkeypatch.setenv("BENCHGEN_BROKER_URL", "redis://127.0.0.1:6379/15")
    monkeypatch.setattr(broker, "run_celery_worker", lambda runtime, queues, threads: 0)
    same = runner.invoke(app, ["worker"])
    assert same.exit_code == 0 and "Warning" not in same.output
    monkeypatch.setenv("BENCHGEN_SECRET_KEY", Fernet.generate_key().decode())
    other = runner.invoke(app, ["worker"])
    assert other.exit_code == 0
    text = " ".join(other.output.split())
    assert "decrypts none of the 1 newest stored API keys" in text
    assert "BENCHGEN_SECRET_KEY" in text and "sk-123" not in text


@pytest.mark.parametrize(
    "name", ["Mine [/]", "[link=https://evil.example]Docs[/link]", "[bold red]x"]
)
def test_names_are_printed_as_typed_never_read_as_markup(
    world: World, name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A model named "[/]" crashed the commands that print it (a stranger's name crashed the
    owner's `compare`), and "[link=…]" hid a link in the terminal."""
    world.user("ana@example.com")
    monkeypatch.setenv("BENCHGEN_MODEL_HOST_ALLOWLIST", "127.0.0.1")
    added = _ok(
        "models",
        "add",
        "--as",
        "ana@example.com",
        "--name",
        name,
        "--endpoint-model",
        "m",
        "--base-url",
        "http://127.0.0.1:9/v1",
    )
    assert name in added
    listed = runner.invoke(
        app, ["models", "list", "--as", "ana@example.com"], env={"COLUMNS": "300"}
    )
    assert listed.exit_code == 0 and name in listed.output


def test_version_is_printed_without_loading_any_command() -> None:
    """`benchgen --version` was "No such option", the first thing many people type."""
    from benchgen import __version__

    done = CliRunner().invoke(app, ["--version"])
    assert done.exit_code == 0 and done.output == f"benchgen {__version__}\n"
