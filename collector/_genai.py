"""Pull the GenAI fields the dashboard and gate query out of span and resource attributes.

Reads the OpenTelemetry GenAI conventions (including the deprecated token names), OpenInference
and evallens' own ``evallens.*`` names, all defined once in ``evallens.telemetry.attributes``.
"""

import math
from typing import Any

from evallens.db.models.traces import DEFAULT_PROJECT
from evallens.telemetry import attributes as names

MODEL_NAMES = (names.GEN_AI_RESPONSE_MODEL, names.GEN_AI_REQUEST_MODEL, names.LLM_MODEL_NAME)
INPUT_TOKEN_NAMES = (
    names.GEN_AI_USAGE_INPUT_TOKENS,
    names.GEN_AI_USAGE_PROMPT_TOKENS,
    names.LLM_TOKEN_COUNT_PROMPT,
)
OUTPUT_TOKEN_NAMES = (
    names.GEN_AI_USAGE_OUTPUT_TOKENS,
    names.GEN_AI_USAGE_COMPLETION_TOKENS,
    names.LLM_TOKEN_COUNT_COMPLETION,
)
BIGINT_MAX = 2**63 - 1


def first_present(attributes: dict[str, Any], keys: tuple[str, ...]) -> Any:
    """The value of the first of ``keys`` present in ``attributes``."""
    for key in keys:
        value = attributes.get(key)
        if value is not None:
            return value
    return None


def as_text(value: Any) -> str | None:
    """A non-empty string, or None for anything else."""
    if isinstance(value, str):
        return value or None
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    return None


def as_count(value: Any) -> int | None:
    """A token count: a non-negative integer that fits a bigint, else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        value = int(value)
    elif isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    return value if isinstance(value, int) and 0 <= value <= BIGINT_MAX else None


def as_number(value: Any) -> float | None:
    """A finite non-negative number, else None."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return None
    try:
        number = float(value)
    except ValueError:
        return None
    return number if math.isfinite(number) and number >= 0 else None


SCOPED_NAMES = (
    names.PROJECT,
    names.TENANT,
    names.USER,
    names.FEATURE,
    names.EVAL_RUN_ID,
    names.EVAL_CASE_ID,
)


def resource_defaults(resource: dict[str, Any]) -> tuple[str | None, ...]:
    """Project, tenant, user, feature, eval run and case set on the resource (spans may override them)."""
    return tuple(as_text(resource.get(key)) for key in SCOPED_NAMES)


class GenAIFields:
    """The extracted fields of one span; ``defaults`` come from ``resource_defaults`` of its resource."""

    __slots__ = (
        "concurrent_requests",
        "cost_usd",
        "engine_time_s",
        "eval_case_id",
        "eval_run_id",
        "feature",
        "input_tokens",
        "model",
        "output_tokens",
        "project",
        "tenant",
        "user_id",
    )

    def __init__(self, attributes: dict[str, Any], defaults: tuple[str | None, ...]) -> None:
        get = attributes.get
        self.model = as_text(first_present(attributes, MODEL_NAMES))
        self.input_tokens = as_count(first_present(attributes, INPUT_TOKEN_NAMES))
        self.output_tokens = as_count(first_present(attributes, OUTPUT_TOKEN_NAMES))
        cost, engine_time, concurrent = (
            get(names.COST_USD),
            get(names.ENGINE_TIME_S),
            get(names.ENGINE_CONCURRENT_REQUESTS),
        )
        self.cost_usd = None if cost is None else as_number(cost)
        self.engine_time_s = None if engine_time is None else as_number(engine_time)
        self.concurrent_requests = None if concurrent is None else as_count(concurrent)
        project, tenant, user_id, feature, eval_run_id, eval_case_id = (
            (as_text(value) or default) if (value := get(key)) is not None else default
            for key, default in zip(SCOPED_NAMES, defaults, strict=True)
        )
        self.project = project or DEFAULT_PROJECT
        self.tenant, self.user_id, self.feature = tenant, user_id, feature
        self.eval_run_id, self.eval_case_id = eval_run_id, eval_case_id
