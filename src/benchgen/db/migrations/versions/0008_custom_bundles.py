"""custom bundles: bundle versions, phase rules, submission runs, the agent's scratch copies

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-03 17:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from benchgen.db.tables import UTCDateTime

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "bundle_versions",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("benchmark_id", sa.String(length=40), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("sha256", sa.String(length=64), nullable=False),
        sa.Column("size", sa.Integer(), nullable=False),
        sa.Column("storage_key", sa.String(length=300), nullable=False),
        sa.Column("filename", sa.String(length=300), nullable=False),
        sa.Column("competition", sa.JSON(), nullable=False),
        sa.Column("warnings", sa.JSON(), nullable=False),
        sa.Column("solutions", sa.JSON(), nullable=False),
        sa.Column("uploaded_by", sa.String(length=40), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(["benchmark_id"], ["benchmarks.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["uploaded_by"], ["users.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("benchmark_id", "version"),
    )
    op.create_index(
        op.f("ix_bundle_versions_benchmark_id"), "bundle_versions", ["benchmark_id"], unique=False
    )
    op.create_index(
        op.f("ix_bundle_versions_uploaded_by"), "bundle_versions", ["uploaded_by"], unique=False
    )
    op.create_table(
        "scratch_copies",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("conversation_id", sa.String(length=40), nullable=False),
        sa.Column("user_id", sa.String(length=40), nullable=False),
        sa.Column("benchmark_id", sa.String(length=40), nullable=False),
        sa.Column("base_version", sa.Integer(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(["benchmark_id"], ["benchmarks.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["conversation_id"], ["conversations.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("conversation_id", "benchmark_id"),
    )
    for column in ("benchmark_id", "conversation_id", "user_id"):
        op.create_index(
            op.f(f"ix_scratch_copies_{column}"), "scratch_copies", [column], unique=False
        )
    with op.batch_alter_table("phases", schema=None) as batch_op:
        batch_op.add_column(sa.Column("rules", sa.JSON(), nullable=False, server_default="{}"))
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.add_column(sa.Column("submission", sa.JSON(), nullable=True))
        batch_op.alter_column("model_id", existing_type=sa.String(length=40), nullable=True)


def downgrade() -> None:
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.alter_column("model_id", existing_type=sa.String(length=40), nullable=False)
        batch_op.drop_column("submission")
    with op.batch_alter_table("phases", schema=None) as batch_op:
        batch_op.drop_column("rules")
    op.drop_table("scratch_copies")
    op.drop_table("bundle_versions")
