"""Question embeddings stored once per embedding model, so that mining never embeds a text twice."""

from datetime import datetime

from sqlalchemy import LargeBinary, Text, func
from sqlalchemy.dialects.postgresql import TIMESTAMP
from sqlalchemy.orm import Mapped, mapped_column

from evallens.db.base import Base


class QuestionEmbedding(Base):
    """The unit vector one embedding model gave one normalized question."""

    __tablename__ = "question_embeddings"

    embedding_model: Mapped[str] = mapped_column(
        Text, primary_key=True, comment="the model and weights that made the vector"
    )
    text_sha256: Mapped[str] = mapped_column(
        Text, primary_key=True, comment="sha256 (hex) of the normalized question"
    )
    vector: Mapped[bytes] = mapped_column(
        LargeBinary, comment="unit-length float32 values, little-endian, exactly as the model gave them"
    )
    created_at: Mapped[datetime] = mapped_column(TIMESTAMP(timezone=True), server_default=func.now())
