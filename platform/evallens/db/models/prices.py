"""Model prices used to tag spans that carry tokens but no cost."""

from datetime import datetime

from sqlalchemy import CheckConstraint, Identity, Integer, Numeric, Text, UniqueConstraint
from sqlalchemy.dialects.postgresql import TIMESTAMP
from sqlalchemy.orm import Mapped, mapped_column

from evallens.db.base import Base


class ModelPrice(Base):
    """Price of one model over a validity window.

    API models are priced per million input/output tokens; self-hosted models per GPU-hour, which
    the collector spreads over a span's share of engine time.
    """

    __tablename__ = "model_prices"
    __table_args__ = (
        UniqueConstraint("model", "valid_from"),
        CheckConstraint(
            "(input_usd_per_mtok IS NOT NULL AND output_usd_per_mtok IS NOT NULL)"
            " OR gpu_hour_usd IS NOT NULL",
            name="has_a_price",
        ),
    )

    id: Mapped[int] = mapped_column(Integer, Identity(), primary_key=True)
    model: Mapped[str] = mapped_column(Text)
    pattern: Mapped[str | None] = mapped_column(
        Text, comment="case-insensitive glob of other names the price covers (gpt-4o-20*)"
    )
    provider: Mapped[str | None] = mapped_column(Text)
    input_usd_per_mtok: Mapped[float | None] = mapped_column(Numeric(14, 6, asdecimal=False))
    output_usd_per_mtok: Mapped[float | None] = mapped_column(Numeric(14, 6, asdecimal=False))
    gpu_hour_usd: Mapped[float | None] = mapped_column(Numeric(14, 6, asdecimal=False))
    valid_from: Mapped[datetime] = mapped_column(TIMESTAMP(timezone=True))
    valid_to: Mapped[datetime | None] = mapped_column(TIMESTAMP(timezone=True))
