"""run settings: generation settings, samples, subsets, retries, the response cache

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-06 12:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from benchgen.db.tables import UTCDateTime

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.add_column(sa.Column("settings", sa.JSON(), nullable=False, server_default="{}"))
        batch_op.add_column(sa.Column("positions", sa.JSON(), nullable=True))
        batch_op.add_column(
            sa.Column("partial", sa.Boolean(), nullable=False, server_default=sa.false())
        )
        batch_op.add_column(sa.Column("retry_of", sa.String(length=40), nullable=True))
        batch_op.add_column(sa.Column("calls", sa.Integer(), nullable=False, server_default="0"))
        batch_op.create_index(batch_op.f("ix_runs_retry_of"), ["retry_of"], unique=False)
    # Runs before this revision charged per answered question: that is what `calls` counts.
    op.execute("UPDATE runs SET calls = done_count - error_count")
    op.create_table(
        "run_samples",
        sa.Column("run_id", sa.String(length=40), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("sample", sa.Integer(), nullable=False),
        sa.Column("prompt_sent", sa.Text(), nullable=False),
        sa.Column("raw", sa.Text(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("input_tokens", sa.Integer(), nullable=False),
        sa.Column("output_tokens", sa.Integer(), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(["run_id"], ["runs.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("run_id", "position", "sample"),
    )
    op.create_table(
        "response_cache",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("user_id", sa.String(length=40), nullable=False),
        sa.Column("key", sa.String(length=64), nullable=False),
        sa.Column("reply", sa.Text(), nullable=False),
        sa.Column("tokens", sa.Integer(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("user_id", "key", name="uq_response_cache_user_key"),
    )


def downgrade() -> None:
    op.drop_table("response_cache")
    op.drop_table("run_samples")
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_runs_retry_of"))
        for column in ("calls", "retry_of", "partial", "positions", "settings"):
            batch_op.drop_column(column)
