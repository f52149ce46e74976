"""Projects (tenants) and their API keys (prefix + salted hash, scope, use and revocation times).

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-01 09:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "projects",
        sa.Column("id", sa.Integer(), sa.Identity(always=False), nullable=False),
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column(
            "created_at", postgresql.TIMESTAMP(timezone=True), server_default=sa.text("now()"), nullable=False
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_projects")),
        sa.UniqueConstraint("name", name=op.f("uq_projects_name")),
    )
    op.create_table(
        "api_keys",
        sa.Column("id", sa.Integer(), sa.Identity(always=False), nullable=False),
        sa.Column("project_id", sa.Integer(), nullable=False),
        sa.Column("prefix", sa.Text(), nullable=False, comment="public part of the key, shown in lists"),
        sa.Column("salt", sa.LargeBinary(), nullable=False),
        sa.Column(
            "key_hash", sa.LargeBinary(), nullable=False, comment="HMAC-SHA256 of the secret keyed by salt"
        ),
        sa.Column("scope", sa.Text(), nullable=False, comment="ingest, read or admin"),
        sa.Column(
            "created_at", postgresql.TIMESTAMP(timezone=True), server_default=sa.text("now()"), nullable=False
        ),
        sa.Column("last_used_at", postgresql.TIMESTAMP(timezone=True), nullable=True),
        sa.Column("revoked_at", postgresql.TIMESTAMP(timezone=True), nullable=True),
        sa.CheckConstraint("scope IN ('ingest', 'read', 'admin')", name=op.f("ck_api_keys_scope")),
        sa.ForeignKeyConstraint(
            ["project_id"], ["projects.id"], name=op.f("fk_api_keys_project_id_projects"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_api_keys")),
        sa.UniqueConstraint("prefix", name=op.f("uq_api_keys_prefix")),
    )
    op.create_index(op.f("ix_api_keys_project_id"), "api_keys", ["project_id"], unique=False)


def downgrade() -> None:
    op.drop_index(op.f("ix_api_keys_project_id"), table_name="api_keys")
    op.drop_table("api_keys")
    op.drop_table("projects")
