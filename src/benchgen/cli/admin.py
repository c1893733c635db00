"""`benchgen admin …`: the operator's commands for accounts, credits, tokens, settings and
benchmark run quotas (those act `--as` the benchmark's owner)."""

from __future__ import annotations

import os
from enum import StrEnum
from typing import TYPE_CHECKING, Annotated
from urllib.parse import urlsplit

import typer

from benchgen.cli.common import (
    OPERATOR,
    As,
    as_operator,
    as_user,
    by_option,
    console,
    open_runtime,
    print_table,
    say_error,
    wrapping_table,
)
from benchgen.cli.helptext import App
from benchgen.services import deployment, models
from benchgen.services.accounts import credits, ratelimits, tokens, users
from benchgen.services.benchmarks import outbox, outbox_delivery
from benchgen.services.runtime import Runtime

if TYPE_CHECKING:
    from benchgen.core.config import Settings

app = App(help="Operator administration (acts with admin powers).", no_args_is_help=True)

# The services' fields as each command's options name them.
LOCAL_MODEL_OPTIONS = {
    "name": "--name",
    "kind": "--kind",
    "endpoint_model": "--path",
    "price_per_question": "--price",
}
USER_OPTIONS = {
    "email": "--email",
    "password": "--password",
    "display_name": "--name",
    "amount": "--credits",
}
GRANT_OPTIONS = {"amount": "AMOUNT", "note": "--note"}
TOKEN_OPTIONS = {"name": "--name", "scopes": "--scopes", "expires_days": "--expires-days"}
Email = Annotated[str, typer.Option("--email", help="The account's email address.")]
# The agent's brain: in `settings`, but only the environment sets it.
BRAIN = ("agent_model", "agent_base_url", "agent_api_key")


class LocalKind(StrEnum):
    """The kinds of model whose weights lie on this server (the others are remote)."""

    HF = "local_hf"
    GGUF = "local_gguf"


@app.command("create-user")
def create_user(
    email: Email,
    password: Annotated[
        str,
        typer.Option(
            prompt=True,
            hide_input=True,
            confirmation_prompt=True,
            help="At least 8 characters; asked for (hidden) when not given.",
        ),
    ],
    name: Annotated[str, typer.Option(help="Display name (default: from the email).")] = "",
    admin: Annotated[bool, typer.Option("--admin", help="Give admin powers.")] = False,
    initial: Annotated[int, typer.Option("--credits", min=0, help="Credits to grant.")] = 0,
) -> None:
    """Create an account, optionally an admin, optionally with credits.

    \b
    Examples:
      $ benchgen admin create-user --email ana@example.com --credits 500
      $ benchgen admin create-user --email ops@example.com --admin
    """
    with open_runtime() as runtime, as_operator(runtime) as ctx, by_option(USER_OPTIONS):
        user = users.create_user(ctx, email, password, name, is_admin=admin)
        if initial:
            credits.grant_credits(ctx, user.id, initial, "initial credits")
    console.print(f"Created {user.email} ({user.id}){' as admin' if admin else ''}.")


@app.command("grant-credits")
def grant_credits(
    email: Email,
    amount: Annotated[int, typer.Argument(min=1, help="Whole credits to add.")],
    note: Annotated[str, typer.Option(help="Why (kept in the ledger).")] = "",
) -> None:
    """Add credits to an account; prints the new balance.

    \b
    Examples:
      $ benchgen admin grant-credits --email ana@example.com 250 --note 'course'
    """
    with open_runtime() as runtime, as_operator(runtime) as ctx, by_option(GRANT_OPTIONS):
        user = users.get_user_by_email(ctx, email)
        balance = credits.grant_credits(ctx, user.id, amount, note)
    console.print(f"{user.email} now has {balance} credits.")


@app.command("disable-user")
def disable_user(email: Email) -> None:
    """Disable an account: its sign-ins, sessions, tokens, agent turns, runs and training jobs
    stop at once.

    \b
    Examples:
      $ benchgen admin disable-user --email ana@example.com
    """
    _set_active(email, active=False)


@app.command("enable-user")
def enable_user(email: Email) -> None:
    """Enable a disabled account again (its old sessions and tokens do not come back).

    \b
    Examples:
      $ benchgen admin enable-user --email ana@example.com
    """
    _set_active(email, active=True)


@app.command("grant-admin")
def grant_admin(email: Email) -> None:
    """Make an account an administrator: users, invites, settings, reports and the audit log.

    \b
    Examples:
      $ benchgen admin grant-admin --email ana@example.com
    """
    _set_admin(email, admin=True)


@app.command("revoke-admin")
def revoke_admin(email: Email) -> None:
    """Make an administrator an ordinary user again (from their next request).

    \b
    Examples:
      $ benchgen admin revoke-admin --email ana@example.com
    """
    _set_admin(email, admin=False)


def _set_admin(email: str, admin: bool) -> None:
    with open_runtime() as runtime, as_operator(runtime) as ctx:
        user = users.set_admin(ctx, users.get_user_by_email(ctx, email).id, admin)
    console.print(f"{user.email} is {'an administrator' if admin else 'an ordinary user'}.")


def _set_active(email: str, active: bool) -> None:
    with open_runtime() as runtime, as_operator(runtime) as ctx:
        user = users.set_active(ctx, users.get_user_by_email(ctx, email).id, active)
    console.print(f"{user.email} is {'enabled' if active else 'disabled'}.")


@app.command("add-local-model")
def add_local_model(
    name: Annotated[str, typer.Option(help="Its name in everyone's catalogue.")],
    path: Annotated[
        str,
        typer.Option(
            help="A Hugging Face model folder (config.json + *.safetensors) or a .gguf file on "
            "this server, or `smollm2` for the packaged SmolLM2."
        ),
    ],
    kind: Annotated[
        LocalKind | None,
        typer.Option(
            help="local_hf (a folder) or local_gguf (a file); by default local_gguf for a .gguf "
            "file or `smollm2`, else local_hf."
        ),
    ] = None,
    price: Annotated[int, typer.Option(min=0, help="Credits per question asked.")] = 0,
) -> None:
    """Offer a model whose weights lie on this server to everyone: runs use it, and training
    jobs may use it as their base. Only the operator registers paths: a user never names a
    file on the server.

    \b
    Examples:
      $ benchgen admin add-local-model --name 'Qwen2.5 0.5B' --kind local_hf --path /models/qwen
    """
    if path != "smollm2":
        # Stored as the server will look for it: a relative path meant this shell's folder,
        # and a server started elsewhere found nothing there.
        path = os.path.abspath(os.path.expanduser(path))
    gguf = path == "smollm2" or path.lower().endswith(".gguf")
    chosen = kind or (LocalKind.GGUF if gguf else LocalKind.HF)
    spec = {"name": name, "kind": chosen.value, "endpoint_model": path, "price_per_question": price}
    with open_runtime() as runtime, as_operator(runtime) as ctx, by_option(LOCAL_MODEL_OPTIONS):
        made = models.create_platform_model(ctx, spec)
    console.print(f"Added {made.name} ({made.id}, {made.kind}).")


@app.command("create-token")
def create_token(
    email: Email,
    scopes: Annotated[
        str, typer.Option(help="Comma-separated: read,runs,create,edit,publish,train")
    ],
    expires_days: Annotated[
        int | None,
        typer.Option(help="Days until it expires (default: BENCHGEN_TOKEN_DEFAULT_DAYS, 90)."),
    ] = None,
    name: Annotated[str, typer.Option(help="A label to recognise it by.")] = "cli",
) -> None:
    """Mint a personal API token for a user. Prints only the token, once, on stdout.

    \b
    Examples:
      $ benchgen admin create-token --email ana@example.com --scopes read,runs --expires-days 30
    """
    with open_runtime() as runtime, as_user(runtime, email) as ctx, by_option(TOKEN_OPTIONS):
        made = tokens.create_token(ctx, name, scopes.split(","), expires_days)
    typer.echo(made.secret)


@app.command("list-tokens")
def list_tokens(email: Email) -> None:
    """A user's personal tokens (never the secrets: only their last four characters).

    \b
    Examples:
      $ benchgen admin list-tokens --email ana@example.com
    """
    with open_runtime() as runtime, as_user(runtime, email) as ctx:
        rows = tokens.list_tokens(ctx)
    table = wrapping_table("name", "scopes", "ends with", "expires", "last used", "revoked")
    table.add_column("id", no_wrap=True, min_width=24)
    for row in rows:
        table.add_row(
            row.name,
            ",".join(row.scopes),
            row.last_four,
            f"{row.expires_at:%Y-%m-%d}",
            _when(row.last_used_at),
            _when(row.revoked_at),
            row.id,
        )
    print_table(table, f"{email} has no tokens: `benchgen admin create-token` makes one.")


@app.command("revoke-token")
def revoke_token(token_id: Annotated[str, typer.Argument(help="The token's id (tok_…).")]) -> None:
    """Revoke a personal token now.

    \b
    Examples:
      $ benchgen admin revoke-token tok_…
    """
    with open_runtime() as runtime, as_operator(runtime) as ctx:
        row = tokens.revoke_token(ctx, token_id)
    console.print(f"Revoked {row.id} ({row.name}).")


@app.command("settings")
def show_settings() -> None:
    """The run-time deployment settings in force, and the agent's brain, which only the
    environment sets (of its API key, only whether one is set).

    \b
    Examples:
      $ benchgen admin settings
    """
    with open_runtime() as runtime, as_operator(runtime) as ctx:
        values = deployment.list_settings(ctx)
    for key, value in values.items():
        console.print(f"{key} = {value}")
    console.print("# the agent's brain (BENCHGEN_AGENT_*; change it there and restart):")
    for key, value in _brain(runtime.settings).items():
        console.print(f"{key} = {value}")


def _brain(settings: Settings) -> dict[str, str]:
    """The agent's brain as `settings` name it; of its server's URL, only the scheme, host
    and path (a password or key may ride in the rest); of keys, only whether they are set."""
    url = urlsplit(settings.agent_base_url or "")
    server = f"{url.scheme}://{url.hostname}{f':{url.port}' if url.port else ''}{url.path}"
    key = "(set)" if settings.agent_api_key else "(unset)"
    provider = settings.agent_model.partition(":")[0].strip()
    if not settings.agent_api_key and not url.hostname and provider in ("openai", "anthropic"):
        # A hosted brain then takes its provider's own variable (agent/brains/hosted.py).
        own = f"{provider.upper()}_API_KEY"
        key += f"; {own} is {'set' if os.environ.get(own) else 'not set either'}"
    shown = (settings.agent_model, server if url.hostname else "(unset: the provider's own)", key)
    return dict(zip(BRAIN, shown, strict=True))


@app.command("set")
def set_setting(
    key: Annotated[
        str, typer.Argument(help="e.g. agent_allow_publish; `benchgen admin settings` lists them.")
    ],
    value: Annotated[
        str, typer.Argument(help="true/false, a whole number or, for signup_mode, a word.")
    ],
) -> None:
    """Override a deployment setting (takes effect at once, for every process).

    \b
    Examples:
      $ benchgen admin set agent_allow_publish false
    """
    if key in BRAIN:
        # Shown by `settings` beside the others, but read from the environment at start-up.
        say_error(
            f"{key} is set by BENCHGEN_{key.upper()} in the environment; change it there and "
            "restart the server and workers."
        )
        raise typer.Exit(1)
    with open_runtime() as runtime, as_operator(runtime) as ctx:
        stored = deployment.set_setting(ctx, key, value)
    console.print(f"{key} = {stored}")


@app.command("set-run-quota")
def set_run_quota(
    benchmark: Annotated[str, typer.Argument(help="Benchmark id (bm_…).")],
    runs_per_day: Annotated[
        str, typer.Argument(help="Runs per user per day for people outside the team, or 'default'.")
    ],
    as_email: As,
) -> None:
    """Change how many runs people outside a benchmark's team may make per day (owner only).

    Every run's aggregate score tells its launcher a little about the answer key; this bounds
    how fast an outsider can learn it. 'default' returns to BENCHGEN_STRANGER_RUNS_PER_DAY.

    \b
    Examples:
      $ benchgen admin set-run-quota bm_… 20 --as ana@example.com
      $ benchgen admin set-run-quota bm_… default --as ana@example.com
    """
    quota = _quota_argument(runs_per_day)
    with open_runtime() as runtime, as_user(runtime, as_email) as ctx:
        in_force = ratelimits.set_run_quota(ctx, benchmark, quota)
    source = "the deployment's default" if quota is None else "set for this benchmark"
    console.print(f"Runs by others on {benchmark}: {in_force} per user per day ({source}).")


def _quota_argument(text: str) -> int | None:
    if text.strip().lower() == "default":
        return None
    try:
        return int(text)
    except ValueError:
        say_error("give a whole number of runs per day, or 'default'.")
        raise typer.Exit(2) from None


@app.command("outbox")
def show_outbox(
    deliver: Annotated[
        bool, typer.Option(help="Send waiting mail now via BENCHGEN_SMTP_URL (workers do anyway).")
    ] = False,
    show: Annotated[
        str, typer.Option("--show", help="Print one message in full (e.g. a reset link).")
    ] = "",
) -> None:
    """Mail the platform recorded (participants, verification, password resets) and its
    delivery status (queued, sending, sent, failed: retried; bounced, expired: given up);
    without SMTP, `--show ID` is how to read a message. With SMTP the workers send and retry
    mail by themselves; `--deliver` pushes everything waiting now, failed mail included.

    \b
    Examples:
      $ benchgen admin outbox
      $ benchgen admin outbox --show out_…
    """
    with open_runtime() as runtime:
        if show:
            with as_operator(runtime) as ctx:
                typer.echo(outbox.read_outbox_message(ctx, show))
            return
        if deliver and not runtime.settings.smtp_url:
            # "Sent 0 message(s)" and exit 0 read as done, while every message still waited.
            say_error("BENCHGEN_SMTP_URL is not set: nothing can be sent; set it and run again.")
            raise typer.Exit(1)
        delivered = _push(runtime) if deliver else None
        with as_operator(runtime) as ctx:
            rows = outbox.list_outbox(ctx)
    # The id is what `--show` takes: it must print whole, however narrow the terminal.
    table = wrapping_table("to", "subject", "status", "error")
    table.add_column("id", no_wrap=True, min_width=25)
    for row in rows:
        table.add_row(row.to_email, row.subject, row.status, row.error, row.id)
    print_table(table, "The outbox is empty.")
    if delivered is not None:
        failed = f"; {delivered.failed} failed (see their error)" if delivered.failed else ""
        bounced = f"; {delivered.bounced} bounced (not retried)" if delivered.bounced else ""
        console.print(f"Sent {delivered.sent} message(s){failed}{bounced}.")
        if delivered.failed or delivered.bounced:
            raise typer.Exit(1)


def _push(runtime: Runtime) -> outbox_delivery.Delivered:
    """Send what waits, in the mail thread's rounds: each message in transactions of its own
    and none open while SMTP talks, so a slow relay holds no write lock from the server."""
    # Loaded here: the worker module brings the job handlers, a tenth of a second of every
    # other admin command's start.
    from benchgen.jobs.worker import push_outbox

    return push_outbox(runtime, OPERATOR)


def _when(moment: object) -> str:
    return f"{moment:%Y-%m-%d %H:%M}" if moment else "—"


commands = App()
commands.add_typer(app, name="admin")
