"""Projects (tenants) and their API keys; a key is stored as a prefix and a salted hash, never in clear."""

from datetime import datetime

from sqlalchemy import CheckConstraint, ForeignKey, Identity, Integer, LargeBinary, Text, func
from sqlalchemy.dialects.postgresql import TIMESTAMP
from sqlalchemy.orm import Mapped, mapped_column

from evallens.db.base import Base


class Project(Base):
    """A tenant: spans, eval sets and runs belong to one through their ``project`` column (its name)."""

    __tablename__ = "projects"

    id: Mapped[int] = mapped_column(Integer, Identity(), primary_key=True)
    name: Mapped[str] = mapped_column(Text, unique=True)
    created_at: Mapped[datetime] = mapped_column(TIMESTAMP(timezone=True), server_default=func.now())


class ApiKey(Base):
    """One API key of one project: the public prefix finds the row, the salted hash proves the secret."""

    __tablename__ = "api_keys"
    __table_args__ = (CheckConstraint("scope IN ('ingest', 'read', 'write', 'admin')", name="scope"),)

    id: Mapped[int] = mapped_column(Integer, Identity(), primary_key=True)
    project_id: Mapped[int] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"), index=True)
    prefix: Mapped[str] = mapped_column(Text, unique=True, comment="public part of the key, shown in lists")
    salt: Mapped[bytes] = mapped_column(LargeBinary)
    key_hash: Mapped[bytes] = mapped_column(LargeBinary, comment="HMAC-SHA256 of the secret keyed by salt")
    scope: Mapped[str] = mapped_column(Text, comment="ingest, read, write or admin")
    created_at: Mapped[datetime] = mapped_column(TIMESTAMP(timezone=True), server_default=func.now())
    last_used_at: Mapped[datetime | None] = mapped_column(TIMESTAMP(timezone=True))
    revoked_at: Mapped[datetime | None] = mapped_column(TIMESTAMP(timezone=True))
