"""Pull the GenAI fields the dashboard and gate query out of span and resource attributes.

Reads the OpenTelemetry GenAI conventions (including the deprecated token names), OpenInference
and evallens' own ``evallens.*`` names, all defined once in ``evallens.telemetry.attributes``.
"""

from typing import Any

from collector.validate import SpanLimits, amount, count, key_text
from evallens.telemetry import attributes as names
from evallens.telemetry.attributes import DEFAULT_PROJECT

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


def first_present(attributes: dict[str, Any], keys: tuple[str, ...]) -> tuple[str, Any]:
    """The first of ``keys`` present in ``attributes`` and its value (the last key and None if none is)."""
    for key in keys:
        value = attributes.get(key)
        if value is not None:
            return key, value
    return keys[-1], None


SCOPED_NAMES = (
    names.PROJECT,
    names.TENANT,
    names.USER,
    names.FEATURE,
    names.EVAL_RUN_ID,
    names.EVAL_CASE_ID,
)


def resource_defaults(resource: dict[str, Any], limits: SpanLimits) -> tuple[str | None, ...]:
    """Project, tenant, user, feature, eval run and case set on the resource (spans may override them).

    Raises ``InvalidSpan`` (for every span of the resource) when one is too long.
    """
    return tuple(key_text(f"resource {key}", resource.get(key), limits) for key in SCOPED_NAMES)


class GenAIFields:
    """The extracted fields of one span; ``defaults`` come from ``resource_defaults`` of its resource.

    Raises ``InvalidSpan`` for a value ``collector.validate`` does not accept.
    """

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

    def __init__(
        self, attributes: dict[str, Any], defaults: tuple[str | None, ...], limits: SpanLimits
    ) -> None:
        get = attributes.get
        self.model = key_text(*first_present(attributes, MODEL_NAMES), limits)
        self.input_tokens = count(*first_present(attributes, INPUT_TOKEN_NAMES), limits.max_tokens)
        self.output_tokens = count(*first_present(attributes, OUTPUT_TOKEN_NAMES), limits.max_tokens)
        self.cost_usd = amount(names.COST_USD, get(names.COST_USD), limits.max_cost_usd)
        self.engine_time_s = amount(names.ENGINE_TIME_S, get(names.ENGINE_TIME_S), limits.max_duration_s)
        self.concurrent_requests = count(
            names.ENGINE_CONCURRENT_REQUESTS,
            get(names.ENGINE_CONCURRENT_REQUESTS),
            limits.max_concurrent_requests,
        )
        project, tenant, user_id, feature, eval_run_id, eval_case_id = (
            (key_text(key, value, limits) or default) if (value := get(key)) is not None else default
            for key, default in zip(SCOPED_NAMES, defaults, strict=True)
        )
        self.project = project or DEFAULT_PROJECT
        self.tenant, self.user_id, self.feature = tenant, user_id, feature
        self.eval_run_id, self.eval_case_id = eval_run_id, eval_case_id
