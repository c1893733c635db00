"""training: training jobs, their live log with metrics, Trained models' lineage, datasets'
longest rows, chat turns' heartbeats

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-04 03:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from benchgen.db.tables import UTCDateTime

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_EVENT_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    with op.batch_alter_table("models", schema=None) as batch_op:
        batch_op.add_column(sa.Column("training_job_id", sa.String(length=40), nullable=True))
    with op.batch_alter_table("chat_turns", schema=None) as batch_op:
        batch_op.add_column(sa.Column("heartbeat_at", UTCDateTime(), nullable=True))
    with op.batch_alter_table("datasets", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("longest_row_tokens", sa.Integer(), nullable=False, server_default="0")
        )
    op.create_table(
        "training_jobs",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("owner_id", sa.String(length=40), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("job_type", sa.String(length=16), nullable=False),
        sa.Column("base_model_id", sa.String(length=40), nullable=False),
        sa.Column("dataset_id", sa.String(length=40), nullable=False),
        sa.Column("dataset_sha256", sa.String(length=64), nullable=False),
        sa.Column("hyperparameters", sa.JSON(), nullable=False),
        sa.Column("compute_pool", sa.String(length=64), nullable=False),
        sa.Column("compute_count", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("waiting_for", sa.Text(), nullable=False),
        sa.Column("total_steps", sa.Integer(), nullable=False),
        sa.Column("steps_done", sa.Integer(), nullable=False),
        sa.Column("checkpoint_key", sa.String(length=200), nullable=True),
        sa.Column("checkpoint_step", sa.Integer(), nullable=False),
        sa.Column("estimated_credits", sa.Integer(), nullable=False),
        sa.Column("price_per_step", sa.Integer(), nullable=False),
        sa.Column("credits_charged", sa.Integer(), nullable=False),
        sa.Column("reservation_id", sa.String(length=40), nullable=True),
        sa.Column("job_id", sa.String(length=40), nullable=True),
        sa.Column("trained_model_id", sa.String(length=40), nullable=True),
        sa.Column("peak_rss_bytes", sa.BigInteger(), nullable=False),
        sa.Column("error", sa.Text(), nullable=False),
        sa.Column("cancel_requested_at", UTCDateTime(), nullable=True),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("started_at", UTCDateTime(), nullable=True),
        sa.Column("finished_at", UTCDateTime(), nullable=True),
        sa.Column("deleted_at", UTCDateTime(), nullable=True),
        sa.ForeignKeyConstraint(["owner_id"], ["users.id"]),
        sa.ForeignKeyConstraint(["base_model_id"], ["models.id"]),
        sa.ForeignKeyConstraint(["dataset_id"], ["datasets.id"]),
        sa.ForeignKeyConstraint(["trained_model_id"], ["models.id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("training_jobs", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_training_jobs_owner_id"), ["owner_id"], unique=False)
    op.create_table(
        "training_events",
        sa.Column("id", _EVENT_ID, autoincrement=True, nullable=False),
        sa.Column("job_id", sa.String(length=40), nullable=False),
        sa.Column("at", UTCDateTime(), nullable=False),
        sa.Column("line", sa.Text(), nullable=False),
        sa.Column("step", sa.Integer(), nullable=True),
        sa.Column("loss", sa.Double(), nullable=True),
        sa.Column("learning_rate", sa.Double(), nullable=True),
        sa.Column("tokens_per_s", sa.Double(), nullable=True),
        sa.ForeignKeyConstraint(["job_id"], ["training_jobs.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("training_events", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_training_events_job_id"), ["job_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("training_events", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_training_events_job_id"))
    op.drop_table("training_events")
    with op.batch_alter_table("training_jobs", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_training_jobs_owner_id"))
    op.drop_table("training_jobs")
    with op.batch_alter_table("datasets", schema=None) as batch_op:
        batch_op.drop_column("longest_row_tokens")
    with op.batch_alter_table("chat_turns", schema=None) as batch_op:
        batch_op.drop_column("heartbeat_at")
    with op.batch_alter_table("models", schema=None) as batch_op:
        batch_op.drop_column("training_job_id")
