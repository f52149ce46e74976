"""Question embeddings stored per embedding model (``question_embeddings``).

Bad-case mining embeds the worst distinct production questions and the eval sets' questions on every
mine; most of a cold dashboard view was MiniLM doing that again for texts it had seen before. A row
holds the unit vector one model gave one normalized question, keyed by the model and the text's
sha256, written with ``INSERT ... ON CONFLICT DO NOTHING``: a text is embedded once per model.
The vector is ``bytea`` (float32, little-endian): read back bit for bit with no parsing.

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-01 12:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "question_embeddings",
        sa.Column(
            "embedding_model", sa.Text(), nullable=False, comment="the model and weights that made the vector"
        ),
        sa.Column(
            "text_sha256", sa.Text(), nullable=False, comment="sha256 (hex) of the normalized question"
        ),
        sa.Column(
            "vector",
            sa.LargeBinary(),
            nullable=False,
            comment="unit-length float32 values, little-endian, exactly as the model gave them",
        ),
        sa.Column(
            "created_at", postgresql.TIMESTAMP(timezone=True), server_default=sa.text("now()"), nullable=False
        ),
        sa.PrimaryKeyConstraint("embedding_model", "text_sha256", name=op.f("pk_question_embeddings")),
    )


def downgrade() -> None:
    op.drop_table("question_embeddings")
