"""The knowledge base belongs to a project: a document's key is (project, id), and each chunk carries its
document's project (its foreign key is (project, document_id)), so two projects may hold a document of
the same id and a project's retrieval filters its own chunks. Stored documents and chunks stay, as the
default project's (they were the one knowledge base every client shared before).

Going back keeps one document per id where projects share one: the default project's, else the
first project's by name, as the old key can hold one only (their chunks go with them).

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-02 10:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

DEFAULT_PROJECT = "default"


def upgrade() -> None:
    op.drop_constraint(op.f("fk_chunks_document_id_documents"), "chunks", type_="foreignkey")
    op.drop_constraint(op.f("pk_documents"), "documents", type_="primary")
    op.create_primary_key(op.f("pk_documents"), "documents", ["project", "id"])
    # A constant default: PostgreSQL fills the existing rows without rewriting the table.
    op.add_column("chunks", sa.Column("project", sa.Text(), server_default=DEFAULT_PROJECT, nullable=False))
    op.execute(
        "UPDATE chunks c SET project = d.project FROM documents d"
        " WHERE d.id = c.document_id AND d.project <> c.project"
    )
    op.create_foreign_key(
        op.f("fk_chunks_project_documents"),
        "chunks",
        "documents",
        ["project", "document_id"],
        ["project", "id"],
        ondelete="CASCADE",
    )
    op.drop_index("ix_chunks_document_id", table_name="chunks")
    op.create_index("ix_chunks_project_document_id", "chunks", ["project", "document_id"], unique=False)


def downgrade() -> None:
    # The kept document of an id ranks first: the default project's, then by project name.
    op.execute(
        "DELETE FROM documents a USING documents b WHERE a.id = b.id"
        f" AND (b.project <> '{DEFAULT_PROJECT}', b.project) < (a.project <> '{DEFAULT_PROJECT}', a.project)"
    )
    op.drop_index("ix_chunks_project_document_id", table_name="chunks")
    op.create_index("ix_chunks_document_id", "chunks", ["document_id"], unique=False)
    op.drop_constraint(op.f("fk_chunks_project_documents"), "chunks", type_="foreignkey")
    op.drop_column("chunks", "project")
    op.drop_constraint(op.f("pk_documents"), "documents", type_="primary")
    op.create_primary_key(op.f("pk_documents"), "documents", ["id"])
    op.create_foreign_key(
        op.f("fk_chunks_document_id_documents"),
        "chunks",
        "documents",
        ["document_id"],
        ["id"],
        ondelete="CASCADE",
    )
