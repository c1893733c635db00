"""one pending proposal per conversation

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-03 09:50:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# A proposal is "draft" while the turn that made it runs and "pending" once that turn showed it;
# the database refuses a second open one in a conversation, however proposes race.
_OPEN = "status IN ('draft', 'pending')"


def upgrade() -> None:
    # Older rows may hold several pending proposals per conversation: keep only the newest.
    op.execute(
        "UPDATE proposals SET status = 'superseded' WHERE status = 'pending' AND id NOT IN ("
        " SELECT id FROM (SELECT p.id FROM proposals p WHERE p.status = 'pending' AND p.created_at"
        " = (SELECT MAX(q.created_at) FROM proposals q WHERE q.status = 'pending'"
        " AND q.user_id = p.user_id AND q.conversation_id = p.conversation_id)) AS newest)"
    )
    op.create_index(
        "ux_proposals_one_open",
        "proposals",
        ["user_id", "conversation_id"],
        unique=True,
        sqlite_where=sa.text(_OPEN),
        postgresql_where=sa.text(_OPEN),
    )


def downgrade() -> None:
    op.drop_index("ux_proposals_one_open", table_name="proposals")
