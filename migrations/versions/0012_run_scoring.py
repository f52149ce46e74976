"""Each eval run records how its answers were scored (the metrics' code digest, thresholds, judge and
harm classifier), so that runs scored differently are neither compared nor reused. Runs stored
before have none (null).

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-03 15:30:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column(
        "eval_runs",
        sa.Column(
            "scoring",
            postgresql.JSONB(),
            nullable=True,
            comment="how the answers were scored: metrics code, thresholds, judge, classifier",
        ),
    )


def downgrade() -> None:
    op.drop_column("eval_runs", "scoring")
