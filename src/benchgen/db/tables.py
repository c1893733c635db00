"""SQLAlchemy 2 typed tables for every aggregate the services guard."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, ClassVar

from sqlalchemy import (
    JSON,
    DateTime,
    Dialect,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    TypeDecorator,
    UniqueConstraint,
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
    questions_frozen_at: Mapped[datetime | None]
    published_at: Mapped[datetime | None]
    deleted_at: Mapped[datetime | None]
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
    id: Mapped[str] = _id()
    batch_id: Mapped[str] = mapped_column(String(40), index=True)
    benchmark_id: Mapped[str | None] = mapped_column(ForeignKey("benchmarks.id"), index=True)
    sender_user_id: Mapped[str | None] = _user_fk(nullable=True)
    to_email: Mapped[str] = mapped_column(String(320))
    subject: Mapped[str] = mapped_column(String(300))
    body: Mapped[str] = mapped_column(Text)
    status: Mapped[str] = mapped_column(String(16), default="queued")  # queued | sent | failed
    error: Mapped[str] = mapped_column(Text, default="")
    created_at: Mapped[datetime]
    sent_at: Mapped[datetime | None]


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
