"""run quotas for users outside a benchmark's team; jobs know their user

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-04 10:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("benchmarks", schema=None) as batch_op:
        batch_op.add_column(sa.Column("stranger_runs_per_day", sa.Integer(), nullable=True))
    with op.batch_alter_table("jobs", schema=None) as batch_op:
        batch_op.add_column(sa.Column("user_id", sa.String(length=40), nullable=True))
        # Named: SQLite's table copy needs a name; autogenerate compares keys by their columns.
        batch_op.create_foreign_key("fk_jobs_user_id_users", "users", ["user_id"], ["id"])
        batch_op.create_index(batch_op.f("ix_jobs_user_id"), ["user_id"], unique=False)
    # Jobs queued before this revision work for whoever launched their run: they take part in
    # the per-user slots like new ones.
    op.execute(
        "UPDATE jobs SET user_id = (SELECT runs.launched_by FROM runs WHERE runs.job_id = jobs.id)"
        " WHERE kind = 'run'"
    )


def downgrade() -> None:
    with op.batch_alter_table("jobs", schema=None) as batch_op:
        batch_op.drop_constraint("fk_jobs_user_id_users", type_="foreignkey")
        batch_op.drop_index(batch_op.f("ix_jobs_user_id"))
        batch_op.drop_column("user_id")
    with op.batch_alter_table("benchmarks", schema=None) as batch_op:
        batch_op.drop_column("stranger_runs_per_day")
