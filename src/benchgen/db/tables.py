"""SQLAlchemy 2 typed tables for every aggregate the services guard."""

# No `from __future__ import annotations` here: SQLAlchemy would evaluate each of the ~370
# `Mapped[...]` annotations from its string, about a tenth of declaring the tables, which every
# process (`benchgen run` included) does at start.
from datetime import UTC, datetime
from typing import Any, ClassVar

from sqlalchemy import (
    JSON,
    BigInteger,
    DateTime,
    Dialect,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    TypeDecorator,
    UniqueConstraint,
    text,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


class UTCDateTime(TypeDecorator[datetime]):
    """Timezone-aware UTC in and out on every backend (SQLite would hand back naive values)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime: BenchGen stores timezone-aware UTC only")
        return value.astimezone(UTC)

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None or value.tzinfo is not None:
            return value
        return value.replace(tzinfo=UTC)


class Base(DeclarativeBase):
    """Declarative base; UTC-aware datetimes and JSON columns throughout."""

    type_annotation_map: ClassVar[dict[Any, Any]] = {datetime: UTCDateTime, dict[str, Any]: JSON}


def _id() -> Mapped[str]:
    return mapped_column(String(40), primary_key=True)


def _user_fk(nullable: bool = False) -> Mapped[Any]:
    return mapped_column(ForeignKey("users.id"), nullable=nullable, index=True)


def _big_count() -> Mapped[int]:
    # SQLite's INTEGER already holds 64 bits; PostgreSQL's holds 32.
    return mapped_column(BigInteger().with_variant(Integer, "sqlite"), default=0)


def _benchmark_fk() -> Mapped[str]:
    return mapped_column(ForeignKey("benchmarks.id", ondelete="CASCADE"), index=True)


class User(Base):
    __tablename__ = "users"
    id: Mapped[str] = _id()
    email: Mapped[str] = mapped_column(String(320), unique=True)
    display_name: Mapped[str] = mapped_column(String(200))
    password_hash: Mapped[str | None] = mapped_column(String(200))
    is_admin: Mapped[bool] = mapped_column(default=False)
    is_active: Mapped[bool] = mapped_column(default=True)
    # Set when the owner followed a verification link: only then does the address count for
    # whitelist matches, collaborator adds and password resets.
    email_verified_at: Mapped[datetime | None]
    created_at: Mapped[datetime]


class CreditEntry(Base):
    """Append-only: rows are only ever inserted. Balance = sum(amount)."""

    __tablename__ = "credit_ledger"
    id: Mapped[str] = _id()
    user_id: Mapped[str] = _user_fk()
    kind: Mapped[str] = mapped_column(String(16))  # grant | reserve | settle | refund
    amount: Mapped[int] = mapped_column(Integer)  # signed: reserve is negative
    reservation_id: Mapped[str | None] = mapped_column(String(40), index=True)
    reference: Mapped[str] = mapped_column(String(200), default="")
    note: Mapped[str] = mapped_column(String(500), default="")
    door: Mapped[str] = mapped_column(String(80))
    created_at: Mapped[datetime]


class AuditEvent(Base):
    __tablename__ = "audit_events"
    id: Mapped[str] = _id()
    at: Mapped[datetime] = mapped_column(index=True)
    user_id: Mapped[str | None] = _user_fk(nullable=True)
    door: Mapped[str] = mapped_column(String(80))
    action: Mapped[str] = mapped_column(String(80))
    object_type: Mapped[str] = mapped_column(String(40))
    object_id: Mapped[str] = mapped_column(String(40), index=True)
    details: Mapped[dict[str, Any]] = mapped_column(default=dict)


class Benchmark(Base):
    __tablename__ = "benchmarks"
    id: Mapped[str] = _id()
    owner_id: Mapped[str] = _user_fk()
    title: Mapped[str] = mapped_column(String(200))
    description: Mapped[str] = mapped_column(Text, default="")
    format: Mapped[str] = mapped_column(String(16))  # qa | mcq | custom
    visibility: Mapped[str] = mapped_column(String(16), default="private")
    scoring: Mapped[dict[str, Any]] = mapped_column(default=dict)
    created_door: Mapped[str] = mapped_column(String(80))
    version: Mapped[int] = mapped_column(default=1)
    # The owner's override of the deployment's runs per user per day for non-team users.
    stranger_runs_per_day: Mapped[int | None]
    questions_frozen_at: Mapped[datetime | None]
    published_at: Mapped[datetime | None]
    deleted_at: Mapped[datetime | None]
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]


class BundleVersion(Base):
    """One uploaded Codabench bundle of a custom benchmark: the bytes live in artifact storage
    under `storage_key`; the parsed competition and the solutions' results are kept here."""

    __tablename__ = "bundle_versions"
    __table_args__ = (UniqueConstraint("benchmark_id", "version"),)
    id: Mapped[str] = _id()
    benchmark_id: Mapped[str] = _benchmark_fk()
    version: Mapped[int]
    sha256: Mapped[str] = mapped_column(String(64))
    size: Mapped[int]
    storage_key: Mapped[str] = mapped_column(String(300))
    filename: Mapped[str] = mapped_column(String(300), default="bundle.zip")
    competition: Mapped[dict[str, Any]] = mapped_column()
    warnings: Mapped[list[Any]] = mapped_column(JSON, default=list)
    solutions: Mapped[list[Any]] = mapped_column(JSON, default=list)
    uploaded_by: Mapped[str] = _user_fk()
    created_at: Mapped[datetime]


class ScratchCopy(Base):
    """The agent's working copy of a custom benchmark's bundle, owned by one conversation."""

    __tablename__ = "scratch_copies"
    __table_args__ = (UniqueConstraint("conversation_id", "benchmark_id"),)
    id: Mapped[str] = _id()
    conversation_id: Mapped[str] = mapped_column(
        ForeignKey("conversations.id", ondelete="CASCADE"), index=True
    )
    user_id: Mapped[str] = _user_fk()
    benchmark_id: Mapped[str] = _benchmark_fk()
    base_version: Mapped[int]
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]


class Question(Base):
    __tablename__ = "questions"
    __table_args__ = (UniqueConstraint("benchmark_id", "position"),)
    id: Mapped[str] = _id()
    benchmark_id: Mapped[str] = _benchmark_fk()
    position: Mapped[int]
    prompt: Mapped[str] = mapped_column(Text)
    choices: Mapped[list[str] | None] = mapped_column(JSON)
    answers: Mapped[list[str]] = mapped_column(JSON)  # qa: accepted answers; mcq: [label]
    tags: Mapped[list[str]] = mapped_column(JSON, default=list)
    meta: Mapped[dict[str, Any]] = mapped_column(default=dict)


class Phase(Base):
    __tablename__ = "phases"
    id: Mapped[str] = _id()
    benchmark_id: Mapped[str] = _benchmark_fk()
    name: Mapped[str] = mapped_column(String(200))
    position: Mapped[int]
    starts_at: Mapped[datetime | None]
    ends_at: Mapped[datetime | None]
    # A bundle's phase rules: description, max_submissions, max_submissions_per_day,
    # execution_time_limit.
    rules: Mapped[dict[str, Any]] = mapped_column(default=dict)


class Task(Base):
    __tablename__ = "tasks"
    id: Mapped[str] = _id()
    benchmark_id: Mapped[str] = _benchmark_fk()
    name: Mapped[str] = mapped_column(String(200))
    data_ref: Mapped[str] = mapped_column(String(200), default="questions")
    scoring: Mapped[dict[str, Any]] = mapped_column(default=dict)


class PhaseTask(Base):
    __tablename__ = "phase_tasks"
    phase_id: Mapped[str] = mapped_column(
        ForeignKey("phases.id", ondelete="CASCADE"), primary_key=True
    )
    task_id: Mapped[str] = mapped_column(
        ForeignKey("tasks.id", ondelete="CASCADE"), primary_key=True
    )


class Collaborator(Base):
    __tablename__ = "collaborators"
    benchmark_id: Mapped[str] = mapped_column(
        ForeignKey("benchmarks.id", ondelete="CASCADE"), primary_key=True
    )
    user_id: Mapped[str] = mapped_column(ForeignKey("users.id"), primary_key=True)
    added_at: Mapped[datetime]


class CollaboratorInvitation(Base):
    """An owner's invitation of an email address to collaborate on a benchmark. Its mailed
    link is stored as a SHA-256 only and works once, until it expires or the owner revokes it.
    The rows are also the ledger that limits how many invitations an owner sends."""

    __tablename__ = "collaborator_invitations"
    __table_args__ = (
        Index("ix_collaborator_invitations_inviter_at", "invited_by", "created_at"),
        Index("ix_collaborator_invitations_benchmark_email", "benchmark_id", "email"),
    )
    id: Mapped[str] = _id()
    benchmark_id: Mapped[str] = mapped_column(ForeignKey("benchmarks.id", ondelete="CASCADE"))
    email: Mapped[str] = mapped_column(String(320))
    invited_by: Mapped[str] = mapped_column(ForeignKey("users.id"))
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    created_at: Mapped[datetime]
    expires_at: Mapped[datetime]
    accepted_at: Mapped[datetime | None]
    accepted_by: Mapped[str | None] = mapped_column(ForeignKey("users.id"))
    revoked_at: Mapped[datetime | None]


class WhitelistEntry(Base):
    __tablename__ = "whitelist_entries"
    __table_args__ = (UniqueConstraint("benchmark_id", "entry"),)
    id: Mapped[str] = _id()
    benchmark_id: Mapped[str] = _benchmark_fk()
    entry: Mapped[str] = mapped_column(String(320))  # an exact email, or @domain
    added_at: Mapped[datetime]


class Participant(Base):
    __tablename__ = "participants"
    benchmark_id: Mapped[str] = mapped_column(
        ForeignKey("benchmarks.id", ondelete="CASCADE"), primary_key=True
    )
    user_id: Mapped[str] = mapped_column(ForeignKey("users.id"), primary_key=True)
    status: Mapped[str] = mapped_column(String(16), default="active")  # active | removed
    joined_at: Mapped[datetime]


class OutboxEmail(Base):
    __tablename__ = "outbox_emails"
    # The delivery rounds look for waiting mail, oldest first, on every worker every few seconds.
    __table_args__ = (Index("ix_outbox_emails_status_created", "status", "created_at"),)
    id: Mapped[str] = _id()
    batch_id: Mapped[str] = mapped_column(String(40), index=True)
    benchmark_id: Mapped[str | None] = mapped_column(ForeignKey("benchmarks.id"), index=True)
    sender_user_id: Mapped[str | None] = _user_fk(nullable=True)
    to_email: Mapped[str] = mapped_column(String(320))
    subject: Mapped[str] = mapped_column(String(300))
    body: Mapped[str] = mapped_column(Text)
    # queued | sending (claimed by a sender) | sent | failed | bounced | expired
    status: Mapped[str] = mapped_column(String(16), default="queued")
    error: Mapped[str] = mapped_column(Text, default="")
    created_at: Mapped[datetime]
    sent_at: Mapped[datetime | None]
    claimed_at: Mapped[datetime | None]  # when a sender last claimed it (its last try)


class RateLimitEvent(Base):
    __tablename__ = "rate_limit_events"
    __table_args__ = (Index("ix_rate_limit_user_key_at", "user_id", "key", "at"),)
    id: Mapped[str] = _id()
    user_id: Mapped[str] = mapped_column(ForeignKey("users.id"))
    key: Mapped[str] = mapped_column(String(60))
    at: Mapped[datetime]
    reference: Mapped[str] = mapped_column(String(40), default="")


class ApiToken(Base):
    """Personal tokens (bgp_) and agent turn credentials (bga_); only a SHA-256 is stored."""

    __tablename__ = "api_tokens"
    id: Mapped[str] = _id()
    user_id: Mapped[str] = _user_fk()
    kind: Mapped[str] = mapped_column(String(16))  # personal | agent
    name: Mapped[str] = mapped_column(String(200))
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    last_four: Mapped[str] = mapped_column(String(4))
    scopes: Mapped[list[str]] = mapped_column(JSON)
    parent_token_id: Mapped[str | None] = mapped_column(ForeignKey("api_tokens.id"))
    turn_id: Mapped[str | None] = mapped_column(String(40))
    # The web session a turn credential was minted under: signing out ends the turn too.
    session_id: Mapped[str | None] = mapped_column(ForeignKey("web_sessions.id"))
    created_at: Mapped[datetime]
    expires_at: Mapped[datetime]
    last_used_at: Mapped[datetime | None]
    revoked_at: Mapped[datetime | None]


class DeploymentSetting(Base):
    """Operator overrides of deployment settings, taking precedence over the environment."""

    __tablename__ = "deployment_settings"
    key: Mapped[str] = mapped_column(String(80), primary_key=True)
    value: Mapped[Any] = mapped_column(JSON)
    updated_at: Mapped[datetime]
    updated_by: Mapped[str] = mapped_column(String(80))


class Model(Base):
    """A model in the catalogue: a platform model (no owner) or a user's own."""

    __tablename__ = "models"
    id: Mapped[str] = _id()
    owner_id: Mapped[str | None] = _user_fk(nullable=True)
    name: Mapped[str] = mapped_column(String(200))
    kind: Mapped[str] = mapped_column(
        String(32)
    )  # openai_compat | anthropic | local_gguf | builtin
    endpoint_model: Mapped[str] = mapped_column(String(500))
    base_url: Mapped[str | None] = mapped_column(String(2000))
    api_key_enc: Mapped[str | None] = mapped_column(Text)  # Fernet; never returned
    params: Mapped[dict[str, Any]] = mapped_column(default=dict)
    price_per_question: Mapped[int] = mapped_column(default=0)
    price_per_1k_tokens: Mapped[int] = mapped_column(default=0)
    status: Mapped[str] = mapped_column(String(16), default="available")
    # A Trained model's job: its lineage (base model, dataset, hyperparameters) and checkpoint.
    training_job_id: Mapped[str | None] = mapped_column(String(40))
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]
    deleted_at: Mapped[datetime | None]


class Judge(Base):
    """The AI judge an owner set up for a benchmark (the owner's key pays for it)."""

    __tablename__ = "judges"
    benchmark_id: Mapped[str] = mapped_column(
        ForeignKey("benchmarks.id", ondelete="CASCADE"), primary_key=True
    )
    kind: Mapped[str] = mapped_column(String(32))
    endpoint_model: Mapped[str] = mapped_column(String(500))
    base_url: Mapped[str | None] = mapped_column(String(2000))
    api_key_enc: Mapped[str | None] = mapped_column(Text)
    allow_others: Mapped[bool] = mapped_column(default=False)
    updated_at: Mapped[datetime]


class Run(Base):
    __tablename__ = "runs"
    id: Mapped[str] = _id()
    benchmark_id: Mapped[str] = _benchmark_fk()
    phase_id: Mapped[str] = mapped_column(ForeignKey("phases.id"))
    # None for an uploaded submission, which brings its own predictions or code.
    model_id: Mapped[str | None] = mapped_column(ForeignKey("models.id"), index=True)
    submission: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    launched_by: Mapped[str] = _user_fk()
    door: Mapped[str] = mapped_column(String(80))
    status: Mapped[str] = mapped_column(String(16), index=True)
    benchmark_version: Mapped[int]
    scoring: Mapped[dict[str, Any]] = mapped_column(default=dict)
    question_count: Mapped[int]
    done_count: Mapped[int] = mapped_column(default=0)
    error_count: Mapped[int] = mapped_column(default=0)
    reservation_id: Mapped[str | None] = mapped_column(String(40))
    job_id: Mapped[str | None] = mapped_column(String(40))
    estimated_cost: Mapped[int] = mapped_column(default=0)
    cost: Mapped[int | None]
    # A run's totals: 10,000 questions of 20 samples of 11,000 tokens pass a 32-bit integer.
    judge_input_tokens: Mapped[int] = _big_count()  # the judge's, kept apart
    judge_output_tokens: Mapped[int] = _big_count()
    input_tokens: Mapped[int] = _big_count()
    output_tokens: Mapped[int] = _big_count()
    summary: Mapped[dict[str, Any]] = mapped_column(default=dict)
    scores: Mapped[dict[str, Any]] = mapped_column(default=dict)  # leaderboard columns
    score_edit: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    cancel_requested: Mapped[bool] = mapped_column(default=False)
    error: Mapped[str] = mapped_column(Text, default="")
    created_at: Mapped[datetime]
    started_at: Mapped[datetime | None]
    finished_at: Mapped[datetime | None]
    # Generation settings, samples, subset and prompt version as the run was launched.
    settings: Mapped[dict[str, Any]] = mapped_column(default=dict)
    # The question positions asked (None: all); a partial run never reaches a leaderboard.
    positions: Mapped[list[int] | None] = mapped_column(JSON)
    partial: Mapped[bool] = mapped_column(default=False)
    retry_of: Mapped[str | None] = mapped_column(String(40), index=True)
    # Answered model calls (cache hits excluded): what the per-question price is charged on.
    calls: Mapped[int] = mapped_column(default=0)


class RunResult(Base):
    """One question of one run: what was sent, what came back, how it scored."""

    __tablename__ = "run_results"
    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True)
    position: Mapped[int] = mapped_column(primary_key=True)
    prompt_sent: Mapped[str] = mapped_column(Text)
    raw: Mapped[str | None] = mapped_column(Text)
    error: Mapped[str | None] = mapped_column(Text)
    extracted: Mapped[str | None] = mapped_column(Text)
    outcome: Mapped[str] = mapped_column(String(16))
    score: Mapped[float] = mapped_column(default=0.0)
    reasoning: Mapped[str | None] = mapped_column(Text)
    latency_ms: Mapped[int] = mapped_column(default=0)
    input_tokens: Mapped[int] = mapped_column(default=0)
    output_tokens: Mapped[int] = mapped_column(default=0)
    attempts: Mapped[int] = mapped_column(default=1)
    letter_logprobs: Mapped[dict[str, Any] | None] = mapped_column(JSON)


class RunLogLine(Base):
    __tablename__ = "run_log_lines"
    # 64-bit on PostgreSQL (a busy deployment writes many lines); SQLite's rowid already is.
    id: Mapped[int] = mapped_column(
        BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=True
    )
    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), index=True)
    at: Mapped[datetime]
    line: Mapped[str] = mapped_column(Text)


class Job(Base):
    """The job queue's truth: claimed with a lease, kept alive by heartbeats, retried."""

    __tablename__ = "jobs"
    __table_args__ = (Index("ix_jobs_claim", "status", "run_after"),)
    id: Mapped[str] = _id()
    kind: Mapped[str] = mapped_column(String(40))
    # Whom the job works for: their running jobs share the per-user slots of the claim query.
    user_id: Mapped[str | None] = _user_fk(nullable=True)
    payload: Mapped[dict[str, Any]] = mapped_column(default=dict)
    status: Mapped[str] = mapped_column(String(16))  # queued | running | done | failed | cancelled
    attempts: Mapped[int] = mapped_column(default=0)
    max_attempts: Mapped[int] = mapped_column(default=3)
    run_after: Mapped[datetime]
    lease_owner: Mapped[str | None] = mapped_column(String(80))
    lease_expires_at: Mapped[datetime | None]
    error: Mapped[str] = mapped_column(Text, default="")
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]


class LeaderboardEntry(Base):
    __tablename__ = "leaderboard_entries"
    id: Mapped[str] = _id()
    benchmark_id: Mapped[str] = _benchmark_fk()
    phase_id: Mapped[str] = mapped_column(ForeignKey("phases.id", ondelete="CASCADE"), index=True)
    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), unique=True)
    added_by: Mapped[str] = mapped_column(ForeignKey("users.id"))
    added_at: Mapped[datetime]


class Proposal(Base):
    """An action the agent asked the user to approve, bound to the hash of its exact arguments."""

    __tablename__ = "proposals"
    __table_args__ = (
        Index("ix_proposals_conversation", "user_id", "conversation_id", "status"),
        # At most one proposal open (drafted by a running turn, or shown and pending) per
        # conversation: parallel proposes cannot leave two for an "ok" to approve.
        Index(
            "ux_proposals_one_open",
            "user_id",
            "conversation_id",
            unique=True,
            sqlite_where=text("status IN ('draft', 'pending')"),
            # PostgreSQL's index has the same predicate, from migration 0005. Naming it here as
            # well (postgresql_where) would load SQLAlchemy's PostgreSQL dialect into every
            # process, SQLite ones included: ~35 ms of `benchgen run`'s start. Alembic's
            # comparison of the tables with the migrations reads no predicate either way.
        ),
    )
    id: Mapped[str] = _id()
    user_id: Mapped[str] = mapped_column(ForeignKey("users.id"))
    conversation_id: Mapped[str] = mapped_column(String(40))
    # create_benchmark | edit_benchmark | publish_benchmark | start_run
    kind: Mapped[str] = mapped_column(String(32))
    arguments: Mapped[dict[str, Any]] = mapped_column()
    arguments_hash: Mapped[str] = mapped_column(String(64))
    preview: Mapped[dict[str, Any]] = mapped_column()
    # pending | approved | declined | expired | superseded | executed | failed
    status: Mapped[str] = mapped_column(String(16))
    created_at: Mapped[datetime]
    expires_at: Mapped[datetime]
    decided_at: Mapped[datetime | None]
    result: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    error: Mapped[str] = mapped_column(Text, default="")
    created_by_turn: Mapped[str | None] = mapped_column(String(40))


class Conversation(Base):
    """A chat with the agent. `active_turn_id` is held while a turn runs: one turn at a time."""

    __tablename__ = "conversations"
    __table_args__ = (Index("ix_conversations_user", "user_id", "updated_at"),)
    id: Mapped[str] = _id()
    user_id: Mapped[str] = mapped_column(ForeignKey("users.id"))
    title: Mapped[str] = mapped_column(String(200), default="")
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]
    active_turn_id: Mapped[str | None] = mapped_column(String(40))
    # The rest of a benchmark written part by part: the questions not yet proposed.
    plan: Mapped[dict[str, Any] | None] = mapped_column(JSON)


class ChatTurn(Base):
    """One user message and the agent's answer, as stored (every text already screened)."""

    __tablename__ = "chat_turns"
    __table_args__ = (Index("ix_chat_turns_conversation", "conversation_id", "seq"),)
    id: Mapped[str] = _id()
    conversation_id: Mapped[str] = mapped_column(ForeignKey("conversations.id"))
    seq: Mapped[int]
    user_text: Mapped[str] = mapped_column(Text, default="")
    action: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    # running | completed | awaiting_approval | awaiting_choice | stopped_at_cap | failed
    status: Mapped[str] = mapped_column(String(24))
    reply: Mapped[str] = mapped_column(Text, default="")
    buttons: Mapped[list[Any]] = mapped_column(JSON, default=list)
    proposal_id: Mapped[str | None] = mapped_column(String(40))
    tool_calls: Mapped[list[Any]] = mapped_column(JSON, default=list)
    notices: Mapped[list[Any]] = mapped_column(JSON, default=list)
    brain: Mapped[str] = mapped_column(String(200), default="")
    started_at: Mapped[datetime]
    # Stamped while the process running the turn lives: a turn not stamped for a lease
    # belongs to a process that died, and its conversation is released.
    heartbeat_at: Mapped[datetime | None]
    finished_at: Mapped[datetime | None]


class WebSession(Base):
    """A signed-in browser; only a SHA-256 of the cookie's random id is stored."""

    __tablename__ = "web_sessions"
    id: Mapped[str] = _id()
    user_id: Mapped[str] = _user_fk()
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    # The synchronizer token forms must echo; useless without the session cookie itself.
    csrf_token: Mapped[str] = mapped_column(String(64))
    address: Mapped[str] = mapped_column(String(64), default="")
    user_agent: Mapped[str] = mapped_column(String(200), default="")
    created_at: Mapped[datetime]
    last_seen_at: Mapped[datetime]
    expires_at: Mapped[datetime]  # absolute: no activity extends a session past it
    revoked_at: Mapped[datetime | None]


class AccountLink(Base):
    """A single-use emailed link: verify an address, reset a password, or accept an invite."""

    __tablename__ = "account_links"
    id: Mapped[str] = _id()
    purpose: Mapped[str] = mapped_column(String(16))  # verify | reset | invite
    user_id: Mapped[str | None] = _user_fk(nullable=True)
    email: Mapped[str] = mapped_column(String(320))
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    created_at: Mapped[datetime]
    expires_at: Mapped[datetime]
    used_at: Mapped[datetime | None]


class SigninAttempt(Base):
    """Failed sign-ins, counted per account and per address to throttle password guessing."""

    __tablename__ = "signin_attempts"
    __table_args__ = (
        Index("ix_signin_attempts_account_at", "account", "at"),
        Index("ix_signin_attempts_address_at", "address", "at"),
    )
    id: Mapped[str] = _id()
    account: Mapped[str] = mapped_column(String(320))
    address: Mapped[str] = mapped_column(String(64))
    at: Mapped[datetime]


class ReportedReply(Base):
    """An agent reply a user reported, with the user's note, for the operator to review."""

    __tablename__ = "reported_replies"
    # One report per reply and user, decided by the database even when two arrive at once.
    __table_args__ = (UniqueConstraint("user_id", "turn_id", name="uq_reported_replies_user_turn"),)
    id: Mapped[str] = _id()
    user_id: Mapped[str] = _user_fk()
    conversation_id: Mapped[str] = mapped_column(ForeignKey("conversations.id"))
    turn_id: Mapped[str] = mapped_column(ForeignKey("chat_turns.id"))
    reply: Mapped[str] = mapped_column(Text)
    note: Mapped[str] = mapped_column(Text, default="")
    created_at: Mapped[datetime]
    resolved_at: Mapped[datetime | None]


class NotificationSetting(Base):
    """Where a user's run notifications go: mail to their own address, and/or a signed webhook
    (its secret encrypted with the deployment's key, like third-party API keys)."""

    __tablename__ = "notification_settings"
    user_id: Mapped[str] = mapped_column(ForeignKey("users.id"), primary_key=True)
    email_on_finish: Mapped[bool] = mapped_column(default=False)
    webhook_url: Mapped[str | None] = mapped_column(String(2000))
    webhook_secret_enc: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]


class RunNotification(Base):
    """A run's end notified on one channel. The (run, channel) pair is unique, so the row is the
    claim: a redelivered job finds it taken and sends nothing a second time."""

    __tablename__ = "run_notifications"
    __table_args__ = (
        UniqueConstraint("run_id", "channel", name="uq_run_notifications_run_channel"),
        # The webhook rounds look for what is due again on every worker process.
        Index("ix_run_notifications_status", "status"),
    )
    id: Mapped[str] = _id()
    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"))
    user_id: Mapped[str] = _user_fk()
    channel: Mapped[str] = mapped_column(String(16))  # mail | webhook
    # pending -> sending (claimed by one worker) -> sent | failed | dropped, or, for a webhook
    # that failed in a way that may pass, retrying (until next_try_at) -> sending again
    status: Mapped[str] = mapped_column(String(16))
    outbox_id: Mapped[str | None] = mapped_column(String(40))  # the mail's outbox message
    detail: Mapped[str] = mapped_column(Text, default="")
    created_at: Mapped[datetime]
    sent_at: Mapped[datetime | None]
    tries: Mapped[int] = mapped_column(default=0, server_default="0")  # webhook requests sent
    claimed_at: Mapped[datetime | None]  # when a worker last claimed it to send
    next_try_at: Mapped[datetime | None]  # when a retrying webhook is due again


class RunSample(Base):
    """An extra sample (1 and up) of one question of a run; sample 0 is its RunResult. Stored
    unscored: the summary scores every sample with the run's current scoring."""

    __tablename__ = "run_samples"
    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True)
    position: Mapped[int] = mapped_column(primary_key=True)
    sample: Mapped[int] = mapped_column(primary_key=True)
    prompt_sent: Mapped[str] = mapped_column(Text)
    raw: Mapped[str | None] = mapped_column(Text)
    error: Mapped[str | None] = mapped_column(Text)
    input_tokens: Mapped[int] = mapped_column(default=0)
    output_tokens: Mapped[int] = mapped_column(default=0)
    attempts: Mapped[int] = mapped_column(default=1)


class ResponseCacheEntry(Base):
    """One user's cached model reply (opt-in per run), keyed by a SHA-256 of what was asked."""

    __tablename__ = "response_cache"
    __table_args__ = (UniqueConstraint("user_id", "key", name="uq_response_cache_user_key"),)
    id: Mapped[int] = mapped_column(
        BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=True
    )
    user_id: Mapped[str] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    key: Mapped[str] = mapped_column(String(64))
    reply: Mapped[str] = mapped_column(Text)
    tokens: Mapped[int] = mapped_column(default=0)
    created_at: Mapped[datetime]


class Dataset(Base):
    """A user's uploaded training data, stored normalised as JSONL in artifact storage; only
    its owner knows it exists."""

    __tablename__ = "datasets"
    id: Mapped[str] = _id()
    owner_id: Mapped[str] = _user_fk()
    name: Mapped[str] = mapped_column(String(200))
    format: Mapped[str] = mapped_column(String(32))  # chat | prompt_completion
    source_format: Mapped[str] = mapped_column(String(16))  # jsonl | csv | parquet
    row_count: Mapped[int]
    token_estimate: Mapped[int]
    # The longest row's token estimate (0: unknown, uploaded before it was kept): training
    # plans size memory by it, since rows shorter than max_seq_length are never padded to it.
    longest_row_tokens: Mapped[int] = mapped_column(default=0)
    size: Mapped[int]  # bytes of the normalised JSONL
    sha256: Mapped[str] = mapped_column(String(64))
    storage_key: Mapped[str] = mapped_column(String(200))
    preview: Mapped[list[Any]] = mapped_column(JSON)
    created_at: Mapped[datetime]
    deleted_at: Mapped[datetime | None]


class TrainingJob(Base):
    """A user's training job: the plan it was launched with, where it stands, what it cost, and
    the Trained model it produced. Only its owner knows it exists."""

    __tablename__ = "training_jobs"
    id: Mapped[str] = _id()
    owner_id: Mapped[str] = _user_fk()
    name: Mapped[str] = mapped_column(String(200))
    job_type: Mapped[str] = mapped_column(String(16))  # lora | sft
    base_model_id: Mapped[str] = mapped_column(ForeignKey("models.id"))
    dataset_id: Mapped[str] = mapped_column(ForeignKey("datasets.id"))
    dataset_sha256: Mapped[str] = mapped_column(String(64))  # the exact data it trains on
    hyperparameters: Mapped[dict[str, Any]] = mapped_column(JSON)
    compute_pool: Mapped[str] = mapped_column(String(64))  # cpu | gpu:<type>
    compute_count: Mapped[int] = mapped_column(default=1)
    status: Mapped[str] = mapped_column(String(16))  # queued | running | completed | failed | …
    waiting_for: Mapped[str] = mapped_column(Text, default="")  # why a queued job has not started
    total_steps: Mapped[int]
    steps_done: Mapped[int] = mapped_column(default=0)
    # The newest checkpoint an interrupted attempt resumes from (artifact key prefix and step).
    checkpoint_key: Mapped[str | None] = mapped_column(String(200))
    checkpoint_step: Mapped[int] = mapped_column(default=0)
    estimated_credits: Mapped[int]
    price_per_step: Mapped[int]
    credits_charged: Mapped[int] = mapped_column(default=0)
    reservation_id: Mapped[str | None] = mapped_column(String(40))
    job_id: Mapped[str | None] = mapped_column(String(40))
    trained_model_id: Mapped[str | None] = mapped_column(ForeignKey("models.id"))
    peak_rss_bytes: Mapped[int] = mapped_column(BigInteger, default=0)
    error: Mapped[str] = mapped_column(Text, default="")
    cancel_requested_at: Mapped[datetime | None]
    created_at: Mapped[datetime]
    started_at: Mapped[datetime | None]
    finished_at: Mapped[datetime | None]
    deleted_at: Mapped[datetime | None]


class TrainingEvent(Base):
    """One line of a training job's live log; a step's line also carries its metrics."""

    __tablename__ = "training_events"
    id: Mapped[int] = mapped_column(
        BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=True
    )
    job_id: Mapped[str] = mapped_column(
        ForeignKey("training_jobs.id", ondelete="CASCADE"), index=True
    )
    at: Mapped[datetime]
    line: Mapped[str] = mapped_column(Text)
    step: Mapped[int | None]
    loss: Mapped[float | None]
    learning_rate: Mapped[float | None]
    tokens_per_s: Mapped[float | None]
