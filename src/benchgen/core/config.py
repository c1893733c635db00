"""Deployment settings, read from `BENCHGEN_*` environment variables into one typed object."""

from __future__ import annotations

import base64
import binascii
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

from pydantic import Field, SecretStr, ValidationInfo, field_validator
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

# The folder holding pyproject.toml (src/benchgen/core/ is three below it), where `make` builds
# the programs' runtime: found from here, so a command run from any folder finds it.
_CHECKOUT = Path(__file__).resolve().parents[3]
BROKER_SCHEMES = ("redis", "rediss", "amqp", "amqps")
FERNET_KEY_BYTES = 32
METRICS_TOKEN_MIN = 24  # characters: a bearer token that guessing cannot reach
SMTP_SCHEMES = ("smtp", "smtp+starttls")
# The databases BenchGen runs on, with the drivers it installs.
# Each worker thread takes a job at a time and a database connection while it works: 100000
# were accepted, as many threads started against a pool of a few connections.
MAX_WORKER_THREADS = 64
DATABASE_SCHEMES = ("sqlite", "sqlite+pysqlite", "postgresql+psycopg")


class Settings(BaseSettings):
    """Everything an operator configures; built once per app or command, never at import time."""

    model_config = SettingsConfigDict(env_prefix="BENCHGEN_", extra="ignore")

    data_dir: Path = Field(Path("benchgen-data"), description="Where SQLite and files live.")
    database_url: str | None = Field(
        None, description="SQLAlchemy URL; unset means SQLite in data_dir (postgresql+psycopg://…)."
    )
    secret_key: str | None = Field(
        None, description="Fernet key encrypting stored API keys; unset: a key file in data_dir."
    )
    model_host_allowlist: str = Field(
        "", description="Comma-separated hosts that model endpoints may use despite being private."
    )
    worker_threads: int = Field(
        2, ge=0, le=MAX_WORKER_THREADS, description="Embedded job workers in `benchgen serve`."
    )
    user_run_slots: int | None = Field(
        None,
        ge=1,
        description="Jobs one user may have executing at once, across every worker process; "
        "unset: half of worker_threads, at least 1.",
    )
    run_concurrency: int = Field(16, ge=1, le=256)
    max_reply_chars: int = Field(
        65536,
        ge=1024,
        description="Characters of a model's (or judge's) reply stored per answer; a longer "
        "reply keeps its first quarter and last three quarters around a cut marker.",
    )
    public_url: str | None = Field(None, description="Base URL used for absolute links.")
    smtp_url: str | None = Field(
        None, description="smtp://user:pass@host:port; unset keeps mail in the local outbox."
    )
    mail_from: str = "benchgen@localhost"

    signup_mode: Literal["open", "invite", "closed"] = Field(
        "closed",
        description="Who may make an account in the web app: anyone (open), holders of an "
        "admin's invite link (invite), or nobody (closed); admins and the operator can always "
        "create accounts. Admins may change it at run time.",
    )
    session_idle_minutes: int = Field(
        12 * 60, ge=5, description="A web session unused this long is signed out."
    )
    session_max_hours: int = Field(
        7 * 24, ge=1, description="A web session ends this long after sign-in, used or not."
    )
    signin_window_minutes: int = Field(15, ge=1, description="Window for failed sign-ins.")
    signin_failures_per_account: int = Field(
        5, ge=1, description="Failed sign-ins one account may see per window before a pause."
    )
    signin_failures_per_address: int = Field(
        30, ge=1, description="Failed sign-ins one client address may make per window."
    )
    trusted_proxies: str = Field(
        "",
        description="Comma-separated proxy addresses whose X-Forwarded-For is believed; "
        "from anyone else the header is ignored.",
    )

    agent_allow_create: bool = True
    agent_allow_edit: bool = True
    agent_allow_publish: bool = True
    # At most an hour: the turn's credential lives as long (plus a minute), and an override
    # past that made a "one turn" credential last as long as a token.
    agent_turn_cap_s: int = Field(900, ge=10, le=3600, description="Longest a chat turn may run.")
    agent_model: str = Field(
        "offline",
        description="The agent's brain: offline · local:<gguf path or smollm2> · "
        "openai:<model> · anthropic:<model>.",
    )
    agent_base_url: str | None = Field(
        None,
        description="A server speaking the brain's API (OpenAI-compatible for `openai:<model>`, "
        "Anthropic's for `anthropic:<model>`), e.g. http://127.0.0.1:8000/v1.",
    )
    agent_api_key: SecretStr | None = Field(None, description="Key for the hosted brain.")
    agent_part_size: int = Field(50, ge=1, le=1000, description="Questions per proposed part.")
    agent_wait_s: float = Field(
        60, gt=0, description="How long a chat request waits before answering `running`."
    )
    agent_threads: int = Field(4, ge=1, le=64, description="Chat turns that may run at once.")
    agent_turn_lease_s: int = Field(
        30,
        ge=3,
        description="A running chat turn whose process has not stamped it for this long "
        "(the process died) is marked failed and its conversation released.",
    )

    create_limit_per_day: int = Field(10, ge=1)
    create_limit_per_minute: int = Field(3, ge=1)
    stranger_runs_per_day: int = Field(
        5,
        ge=1,
        description="Runs per user per rolling day on a benchmark outside the user's team "
        "(owners may change it per benchmark).",
    )

    # At most a century: an expiry past year 9999 failed when a token was made (a 500).
    token_default_days: int = Field(90, ge=1, le=36500)
    token_max_days: int = Field(365, ge=1, le=36500)

    argon2_time_cost: int = Field(3, ge=1)
    argon2_memory_kib: int = Field(65536, ge=64)

    sqlite_busy_timeout_ms: int = Field(30000, ge=0)

    max_body_bytes: int = Field(
        2 * 1024 * 1024, ge=1024, description="Largest request body (413 above it)."
    )
    max_import_bytes: int = Field(
        32 * 1024 * 1024, ge=1024, description="Largest request body of a benchmark import."
    )

    max_bundle_bytes: int = Field(
        256 * 1024 * 1024, ge=1024, description="Largest Codabench bundle upload."
    )
    max_submission_bytes: int = Field(
        64 * 1024 * 1024, ge=1024, description="Largest submission (results or code zip)."
    )
    max_dataset_bytes: int = Field(
        64 * 1024 * 1024, ge=1024, description="Largest training dataset upload."
    )
    sandbox_runtime: Path = Field(
        default_factory=lambda: _CHECKOUT / ".sandbox-venv",
        description="The Python environment organisers' programs run with (`make sandbox` "
        "builds it in the checkout), kept apart from the server's own.",
    )
    allow_unsandboxed_programs: bool = Field(
        False,
        description="Run bundle programs with resource limits only where no sandbox can be "
        "made (no bubblewrap or namespaces). Off: such programs do not run at all.",
    )
    program_wall_seconds: int = Field(
        600, ge=1, description="Longest a scoring or ingestion program may run."
    )
    program_memory_mib: int = Field(4096, ge=64, description="Memory one program may use.")
    custom_run_model_calls: int = Field(
        200,
        ge=1,
        description="Model calls reserved for a custom benchmark run whose ingestion program "
        "talks to the model (the proxy stops at the reservation).",
    )

    training_cpu_slots: int = Field(
        1, ge=0, description="Training jobs that may run on this deployment's CPUs at once."
    )
    training_gpus: str | None = Field(
        None,
        description="GPU pools for training, `TYPE=COUNT,…` (e.g. `H200=1,A100=4`); unset: "
        "detected with torch when it is installed and a GPU driver is present; empty: none.",
    )
    local_model_threads: int = Field(
        2,
        ge=1,
        le=64,
        description="CPU threads a local model (GGUF or Hugging Face weights) answers with, in "
        "runs and in the agent's local brain. Where other busy processes share the cores, 1 is "
        "faster: threads that wait on one another each lose their turn on a busy core.",
    )
    training_threads: int = Field(
        1, ge=1, le=64, description="CPU threads one training job uses (torch threads)."
    )
    training_memory_mib: int = Field(
        6144, ge=256, description="Memory one training process may use; larger plans are refused."
    )
    training_cpu_price_per_step: int = Field(
        1, ge=0, description="Credits one optimizer step costs on the CPU pool."
    )
    training_gpu_price_per_step: int = Field(
        5, ge=0, description="Credits one optimizer step costs per GPU."
    )
    training_checkpoint_every: int = Field(
        50, ge=1, description="Steps between the checkpoints an interrupted job resumes from."
    )
    training_max_hours: float = Field(
        24, gt=0, description="Longest a training job may run before it is stopped."
    )
    broker_url: str | None = Field(
        None,
        description="A Celery broker (redis://… or amqp://…): jobs are published there and "
        "`benchgen worker` processes on any machine take them; unset: embedded workers poll "
        "the database.",
    )
    job_sweep_s: int = Field(
        10,
        ge=1,
        description="With a broker: how often workers send again the jobs due that long ago "
        "that nobody holds (a message lost in a broker restart, a worker that died); a job "
        "still late is sent again less often, every 8 sweeps at most.",
    )
    artifact_url: str | None = Field(
        None,
        description="Where bundles, submissions, predictions, datasets and checkpoints are "
        "stored: an fsspec URL such as s3://bucket/prefix (needs the `s3` extra; credentials "
        "from the AWS_* environment or s3fs's configuration); unset: data_dir/artifacts.",
    )
    s3_endpoint_url: str | None = Field(
        None,
        description="The S3-compatible server of an s3:// artifact_url (MinIO, Ceph, a cloud "
        "other than AWS), e.g. http://127.0.0.1:9000; unset: AWS.",
    )
    metrics_token: SecretStr | None = Field(
        None,
        description="The bearer token Prometheus shows to read /metrics (at least "
        f"{METRICS_TOKEN_MIN} characters); unset: /metrics answers 404.",
    )
    job_lease_s: int = Field(
        60,
        ge=3,
        description="How long a worker holds a job between heartbeats before another worker "
        "may take it over (a worker that died is noticed after this).",
    )

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """Arguments, then the environment: no `.env` file nor secrets folder is configured,
        and asking those sources for nothing cost half of building settings (every command)."""
        return init_settings, env_settings

    @field_validator("secret_key")
    @classmethod
    def _secret_key_is_a_fernet_key(cls, value: str | None) -> str | None:
        # Checked here: a wrong key otherwise surfaces as a 500 when a user first saves a
        # model's API key or a webhook.
        if value and not _is_fernet_key(value):
            raise ValueError(
                "must be a Fernet key: 32 bytes in URL-safe base64 (44 characters), as "
                "cryptography's `Fernet.generate_key()` makes"
            )
        return value or None

    @field_validator("token_max_days")
    @classmethod
    def _default_days_fit_the_maximum(cls, value: int, info: ValidationInfo) -> int:
        default = info.data.get("token_default_days")
        if default is not None and value < default:
            raise ValueError(f"must be at least BENCHGEN_TOKEN_DEFAULT_DAYS ({default})")
        return value

    @field_validator("smtp_url")
    @classmethod
    def _smtp_url_is_smtp(cls, value: str | None) -> str | None:
        # Any other scheme was tried as plain SMTP (smtps:// without TLS) or failed per message.
        scheme, sep, _ = (value or "").partition("://")
        if value and not (sep and scheme.lower() in SMTP_SCHEMES):
            raise ValueError("must be smtp://[user:password@]host[:port] or smtp+starttls://…")
        return value or None

    @field_validator("database_url")
    @classmethod
    def _database_is_sqlite_or_postgresql(cls, value: str | None) -> str | None:
        # Checked here: SQLAlchemy's own refusals (an unparsable URL, a port that is no number,
        # a driver not installed) were tracebacks from every command.
        if not value:
            return None
        scheme, sep, _ = value.partition("://")
        if not sep or scheme.lower() not in DATABASE_SCHEMES:
            raise ValueError(
                "must be sqlite:///PATH or postgresql+psycopg://USER[:PASSWORD]@HOST[:PORT]/NAME"
            )
        try:
            urlsplit(value).port  # noqa: B018 - read for its check: a port must be a number
        except ValueError:
            raise ValueError("has a port that is not a number") from None
        if scheme.lower().startswith("sqlite") and urlsplit(value).path in ("", "/", "/:memory:"):
            # Each connection would open a database of its own: the tables made by migrating
            # on one were missing on the next (and the pool settings were a TypeError first).
            raise ValueError("names no file: an in-memory SQLite database is not supported")
        return value

    @field_validator("artifact_url")
    @classmethod
    def _artifact_url_has_scheme(cls, value: str | None) -> str | None:
        if value and "://" not in value:
            raise ValueError("must be a URL such as s3://bucket/prefix (unset: the local folder)")
        return value or None

    @field_validator("agent_base_url")
    @classmethod
    def _agent_base_url_is_http(cls, value: str | None) -> str | None:
        # Checked here: the SDK took any text, the server started, and every turn then failed
        # with "Connection error." and no word of which setting was wrong.
        if not value:
            return None
        parts = urlsplit(value)
        try:
            parts.port  # noqa: B018 - read for its check: a port must be a number
        except ValueError:
            raise ValueError("has a port that is not a number") from None
        if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
            raise ValueError("must be an http(s) URL such as http://127.0.0.1:8000/v1")
        return value

    @field_validator("broker_url")
    @classmethod
    def _broker_is_redis_or_rabbitmq(cls, value: str | None) -> str | None:
        # Checked here, not by Celery when the first job is sent: an unknown scheme there is a
        # KeyError deep in kombu, after the server has started.
        scheme, sep, _ = (value or "").partition("://")
        if value and not (sep and scheme.lower() in BROKER_SCHEMES):
            raise ValueError(
                f"must be a Redis or RabbitMQ URL ({', '.join(s + '://…' for s in BROKER_SCHEMES)})"
            )
        return value or None

    @field_validator("metrics_token")
    @classmethod
    def _metrics_token_long(cls, value: SecretStr | None) -> SecretStr | None:
        # Checked here rather than by min_length, whose message counts a secret's "items".
        if value is not None and len(value.get_secret_value()) < METRICS_TOKEN_MIN:
            raise ValueError(f"must be at least {METRICS_TOKEN_MIN} characters")
        return value

    @field_validator("training_gpus")
    @classmethod
    def _gpu_pools_parse(cls, value: str | None) -> str | None:
        if value:
            parse_gpu_pools(value)
        return value

    def resolved_database_url(self) -> str:
        """The configured URL, or the SQLite file inside the data directory."""
        if self.database_url:
            return self.database_url
        return f"sqlite:///{(self.data_dir / 'benchgen.db').as_posix()}"

    def link(self, path: str) -> str:
        """A web-app link: absolute when a public URL is configured, else the bare path."""
        return f"{self.public_url.rstrip('/')}{path}" if self.public_url else path


def _is_fernet_key(text: str) -> bool:
    try:
        return len(base64.urlsafe_b64decode(text.encode("ascii"))) == FERNET_KEY_BYTES
    except (binascii.Error, UnicodeEncodeError):
        return False


def parse_gpu_pools(text: str) -> dict[str, int]:
    """`H200=1,A100=4` as {"H200": 1, "A100": 4}.

    Raises:
        ValueError: a part is not TYPE=COUNT.
    """
    pools: dict[str, int] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, _, count = part.partition("=")
        if not name.strip() or not count.strip().isdigit():
            raise ValueError(f"{part!r} is not TYPE=COUNT (e.g. H200=1)")
        pools[name.strip()] = int(count)
    return pools
