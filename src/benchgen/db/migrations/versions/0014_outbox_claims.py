"""outbox claims: a sender claims a message (status `sending`, when) before it talks to SMTP

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-12 09:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from benchgen.db.tables import UTCDateTime

revision: str = "0014"
down_revision: str | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("outbox_emails", schema=None) as batch_op:
        batch_op.add_column(sa.Column("claimed_at", UTCDateTime(), nullable=True))
        batch_op.create_index("ix_outbox_emails_status_created", ["status", "created_at"])


def downgrade() -> None:
    with op.batch_alter_table("outbox_emails", schema=None) as batch_op:
        batch_op.drop_index("ix_outbox_emails_status_created")
        batch_op.drop_column("claimed_at")
