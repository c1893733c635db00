"""webhook retries: a webhook that failed for a while is tried again later, a few times

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-14 09:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from benchgen.db.tables import UTCDateTime

revision: str = "0016"
down_revision: str | None = "0015"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("run_notifications", schema=None) as batch_op:
        batch_op.add_column(sa.Column("tries", sa.Integer(), nullable=False, server_default="0"))
        batch_op.add_column(sa.Column("claimed_at", UTCDateTime(), nullable=True))
        batch_op.add_column(sa.Column("next_try_at", UTCDateTime(), nullable=True))
        batch_op.create_index("ix_run_notifications_status", ["status"])


def downgrade() -> None:
    with op.batch_alter_table("run_notifications", schema=None) as batch_op:
        batch_op.drop_index("ix_run_notifications_status")
        batch_op.drop_column("next_try_at")
        batch_op.drop_column("claimed_at")
        batch_op.drop_column("tries")
