"""Cost of a span from its tokens (API models) or its engine time (self-hosted models)."""

from dataclasses import dataclass

TOKENS_PER_PRICE_UNIT = 1_000_000
SECONDS_PER_HOUR = 3600.0


@dataclass(frozen=True)
class Price:
    """A model's price: per million input/output tokens, or per GPU-hour when self-hosted."""

    model: str
    input_usd_per_mtok: float | None = None
    output_usd_per_mtok: float | None = None
    gpu_hour_usd: float | None = None


def token_cost_usd(price: Price, input_tokens: int, output_tokens: int) -> float | None:
    """Cost of a call priced per token, or None when the price is not per token."""
    if price.input_usd_per_mtok is None or price.output_usd_per_mtok is None:
        return None
    return (
        input_tokens * price.input_usd_per_mtok + output_tokens * price.output_usd_per_mtok
    ) / TOKENS_PER_PRICE_UNIT


def gpu_time_cost_usd(price: Price, engine_time_s: float, concurrent_share: float = 1.0) -> float | None:
    """Cost of a self-hosted call: the GPU-hour price spread over the call's share of engine time.

    ``concurrent_share`` is the fraction of the engine this call had (1/N with N requests batched).
    """
    if price.gpu_hour_usd is None:
        return None
    return price.gpu_hour_usd * engine_time_s * concurrent_share / SECONDS_PER_HOUR
