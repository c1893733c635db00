"""collaborator invitations: an owner invites an address; its holder accepts through a mailed link

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-05 03:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from benchgen.db.tables import UTCDateTime

revision: str = "0013"
down_revision: str | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "collaborator_invitations",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("benchmark_id", sa.String(length=40), nullable=False),
        sa.Column("email", sa.String(length=320), nullable=False),
        sa.Column("invited_by", sa.String(length=40), nullable=False),
        sa.Column("token_hash", sa.String(length=64), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("expires_at", UTCDateTime(), nullable=False),
        sa.Column("accepted_at", UTCDateTime(), nullable=True),
        sa.Column("accepted_by", sa.String(length=40), nullable=True),
        sa.Column("revoked_at", UTCDateTime(), nullable=True),
        sa.ForeignKeyConstraint(["benchmark_id"], ["benchmarks.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["invited_by"], ["users.id"]),
        sa.ForeignKeyConstraint(["accepted_by"], ["users.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("token_hash"),
    )
    with op.batch_alter_table("collaborator_invitations", schema=None) as batch_op:
        batch_op.create_index(
            "ix_collaborator_invitations_inviter_at", ["invited_by", "created_at"], unique=False
        )
        batch_op.create_index(
            "ix_collaborator_invitations_benchmark_email", ["benchmark_id", "email"], unique=False
        )


def downgrade() -> None:
    with op.batch_alter_table("collaborator_invitations", schema=None) as batch_op:
        batch_op.drop_index("ix_collaborator_invitations_benchmark_email")
        batch_op.drop_index("ix_collaborator_invitations_inviter_at")
    op.drop_table("collaborator_invitations")
