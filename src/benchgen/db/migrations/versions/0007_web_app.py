"""web app: sessions, emailed account links, sign-in throttling, reported replies

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-03 13:20:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from benchgen.db.tables import UTCDateTime

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "web_sessions",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("user_id", sa.String(length=40), nullable=False),
        sa.Column("token_hash", sa.String(length=64), nullable=False),
        sa.Column("csrf_token", sa.String(length=64), nullable=False),
        sa.Column("address", sa.String(length=64), nullable=False),
        sa.Column("user_agent", sa.String(length=200), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("last_seen_at", UTCDateTime(), nullable=False),
        sa.Column("expires_at", UTCDateTime(), nullable=False),
        sa.Column("revoked_at", UTCDateTime(), nullable=True),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("token_hash"),
    )
    op.create_index(op.f("ix_web_sessions_user_id"), "web_sessions", ["user_id"], unique=False)
    op.create_table(
        "account_links",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("purpose", sa.String(length=16), nullable=False),
        sa.Column("user_id", sa.String(length=40), nullable=True),
        sa.Column("email", sa.String(length=320), nullable=False),
        sa.Column("token_hash", sa.String(length=64), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("expires_at", UTCDateTime(), nullable=False),
        sa.Column("used_at", UTCDateTime(), nullable=True),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("token_hash"),
    )
    op.create_index(op.f("ix_account_links_user_id"), "account_links", ["user_id"], unique=False)
    op.create_table(
        "signin_attempts",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("account", sa.String(length=320), nullable=False),
        sa.Column("address", sa.String(length=64), nullable=False),
        sa.Column("at", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_signin_attempts_account_at", "signin_attempts", ["account", "at"])
    op.create_index("ix_signin_attempts_address_at", "signin_attempts", ["address", "at"])
    op.create_table(
        "reported_replies",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("user_id", sa.String(length=40), nullable=False),
        sa.Column("conversation_id", sa.String(length=40), nullable=False),
        sa.Column("turn_id", sa.String(length=40), nullable=False),
        sa.Column("reply", sa.Text(), nullable=False),
        sa.Column("note", sa.Text(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("resolved_at", UTCDateTime(), nullable=True),
        sa.ForeignKeyConstraint(["conversation_id"], ["conversations.id"]),
        sa.ForeignKeyConstraint(["turn_id"], ["chat_turns.id"]),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("user_id", "turn_id", name="uq_reported_replies_user_turn"),
    )
    op.create_index(
        op.f("ix_reported_replies_user_id"), "reported_replies", ["user_id"], unique=False
    )
    with op.batch_alter_table("users", schema=None) as batch_op:
        batch_op.add_column(sa.Column("email_verified_at", UTCDateTime(), nullable=True))
    # Accounts before this revision were all made by the operator or an admin, who vouch for
    # their addresses (as they do for accounts they create now).
    op.execute("UPDATE users SET email_verified_at = created_at")
    with op.batch_alter_table("api_tokens", schema=None) as batch_op:
        batch_op.add_column(sa.Column("session_id", sa.String(length=40), nullable=True))
        batch_op.create_foreign_key(
            "fk_api_tokens_session_id_web_sessions", "web_sessions", ["session_id"], ["id"]
        )


def downgrade() -> None:
    with op.batch_alter_table("api_tokens", schema=None) as batch_op:
        batch_op.drop_constraint("fk_api_tokens_session_id_web_sessions", type_="foreignkey")
        batch_op.drop_column("session_id")
    with op.batch_alter_table("users", schema=None) as batch_op:
        batch_op.drop_column("email_verified_at")
    op.drop_index(op.f("ix_reported_replies_user_id"), table_name="reported_replies")
    op.drop_table("reported_replies")
    op.drop_index("ix_signin_attempts_address_at", table_name="signin_attempts")
    op.drop_index("ix_signin_attempts_account_at", table_name="signin_attempts")
    op.drop_table("signin_attempts")
    op.drop_index(op.f("ix_account_links_user_id"), table_name="account_links")
    op.drop_table("account_links")
    op.drop_index(op.f("ix_web_sessions_user_id"), table_name="web_sessions")
    op.drop_table("web_sessions")
