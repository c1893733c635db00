"""run token totals as 64-bit integers on PostgreSQL (a long run's sum passed 32 bits)

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-13 09:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0015"
down_revision: str | None = "0014"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# SQLite's INTEGER holds 64 bits already: only PostgreSQL's columns change.
_TOTALS = ("judge_input_tokens", "judge_output_tokens", "input_tokens", "output_tokens")


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    for column in _TOTALS:
        op.alter_column("runs", column, type_=sa.BigInteger(), existing_type=sa.Integer())


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    for column in _TOTALS:
        op.alter_column("runs", column, type_=sa.Integer(), existing_type=sa.BigInteger())
