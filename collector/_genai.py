"""Pull the GenAI fields the dashboard and gate query out of span and resource attributes.

Reads the OpenTelemetry GenAI conventions (including the deprecated token names), OpenInference
and evallens' own ``evallens.*`` names, all defined once in ``evallens.telemetry.attributes``.
"""

import json
from dataclasses import dataclass
from typing import Any

from collector.validate import InvalidSpan, SpanLimits, amount, check_rollup_key, count, key_text
from evallens.telemetry import attributes as names
from evallens.telemetry.attributes import DEFAULT_PROJECT
from evallens.telemetry.messages import clean_text

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
        check_rated_trace(get(names.FEEDBACK_TARGET_TRACE_ID), limits)
        check_rollup_key(self.project, self.model, tenant, feature)


def check_rated_trace(value: Any, limits: SpanLimits) -> None:
    """``InvalidSpan`` unless the trace a feedback span rates is absent or a key: trace summaries index
    it (as ``->>`` text, whatever its JSON type), so an unbounded one made PostgreSQL refuse the batch."""
    name = names.FEEDBACK_TARGET_TRACE_ID
    if isinstance(value, list | dict):
        raise InvalidSpan(f"{name} must be a trace id, not a {type(value).__name__}")
    key_text(name, value, limits)


# --- message content in every form instrumentations send it -------------------------------------

Message = dict[str, str]
INPUT, OUTPUT = "input", "output"
MAX_FLATTENED_MESSAGES = 1000
TEXT_PART_TYPES = (None, "text", "input_text", "output_text")
# direction, the attribute the span gets, and the OpenInference one that makes it unneeded
CONTENT_SIDES = (
    (INPUT, names.GEN_AI_INPUT_MESSAGES, names.INPUT_VALUE),
    (OUTPUT, names.GEN_AI_OUTPUT_MESSAGES, names.OUTPUT_VALUE),
)


def add_content_attributes(attributes: dict[str, Any], events: list[dict[str, Any]]) -> None:
    """Give a span ``gen_ai.input.messages``/``gen_ai.output.messages`` (GenAI JSON) when it carries its
    chat content in another form only, so that every reader of questions and answers reads one place.

    Earlier forms: ``gen_ai.prompt.N.role/content``, ``gen_ai.prompt``/``gen_ai.completion``,
    OpenInference ``llm.input_messages.N.message.*``, and GenAI content span events.
    """
    # nearly every span has none of these: answer it with a few lookups (this runs for every span)
    if not events and EARLIER_FORM_KEYS.isdisjoint(attributes):
        return
    for direction, target, plain in CONTENT_SIDES:
        if target in attributes or plain in attributes:
            continue
        messages = attribute_messages(attributes, direction)
        if not messages and events:
            messages = [
                message
                for event in events
                for side, found in event_messages(event.get("name"), event.get("attributes") or {}, None)
                if side == direction
                for message in found
            ]
        if messages:
            attributes[target] = json.dumps(
                [{"role": m["role"], "parts": [{"type": "text", "content": m["content"]}]} for m in messages],
                ensure_ascii=False,
            )


@dataclass(frozen=True)
class _EarlierForms:
    """Where one direction's content sits in the earlier attribute forms (keys built once, not per span)."""

    default_role: str
    flattened_prefixes: tuple[str, ...]  # "{}" stands for N
    single: str

    def first_keys(self) -> tuple[tuple[str, str, str], ...]:
        return tuple(
            (prefix.format(0) + "role", prefix.format(0) + "content", prefix)
            for prefix in self.flattened_prefixes
        )


EARLIER_FORMS = {
    INPUT: _EarlierForms(
        "user", ("gen_ai.prompt.{}.", f"{names.LLM_INPUT_MESSAGES}.{{}}.message."), names.GEN_AI_PROMPT
    ),
    OUTPUT: _EarlierForms(
        "assistant",
        ("gen_ai.completion.{}.", f"{names.LLM_OUTPUT_MESSAGES}.{{}}.message."),
        names.GEN_AI_COMPLETION,
    ),
}
FIRST_KEYS = {direction: forms.first_keys() for direction, forms in EARLIER_FORMS.items()}
EARLIER_FORM_KEYS = frozenset(
    [key for keys in FIRST_KEYS.values() for role, content, _ in keys for key in (role, content)]
    + [forms.single for forms in EARLIER_FORMS.values()]
)


def attribute_messages(attributes: dict[str, Any], direction: str) -> list[Message]:
    """The messages of one direction in span attributes of the earlier forms (not the current one)."""
    forms = EARLIER_FORMS[direction]
    for role_key, content_key, prefix in FIRST_KEYS[direction]:
        if role_key in attributes or content_key in attributes:
            return _flattened(attributes, prefix, forms.default_role)
    if forms.single in attributes:
        return value_messages(attributes[forms.single], forms.default_role)
    return []


def event_messages(name: Any, attributes: dict[str, Any], body: Any) -> list[tuple[str, list[Message]]]:
    """The messages a GenAI content event (a span event or an OTLP log record) carries, by direction."""
    if not isinstance(name, str) or not name.startswith("gen_ai."):
        return []
    source = body if isinstance(body, dict) else attributes
    found: list[tuple[str, list[Message]]] = []
    if name == names.EVENT_GEN_AI_OPERATION_DETAILS:
        found = [
            (INPUT, value_messages(attributes.get(names.GEN_AI_INPUT_MESSAGES), "user")),
            (OUTPUT, value_messages(attributes.get(names.GEN_AI_OUTPUT_MESSAGES), "assistant")),
        ]
    elif name == names.EVENT_GEN_AI_CONTENT_PROMPT:
        found = [(INPUT, value_messages(attributes.get(names.GEN_AI_PROMPT), "user"))]
    elif name == names.EVENT_GEN_AI_CONTENT_COMPLETION:
        found = [(OUTPUT, value_messages(attributes.get(names.GEN_AI_COMPLETION), "assistant"))]
    elif name == names.EVENT_GEN_AI_CHOICE:
        message = source.get("message")
        found = [(OUTPUT, value_messages([message if isinstance(message, dict) else source], "assistant"))]
    elif name.endswith(names.EVENT_GEN_AI_MESSAGE_SUFFIX):
        role = name.removeprefix("gen_ai.").removesuffix(names.EVENT_GEN_AI_MESSAGE_SUFFIX)
        found = [(INPUT, value_messages([source], role))]
    return [(direction, messages) for direction, messages in found if messages]


def value_messages(value: Any, default_role: str) -> list[Message]:
    """Messages from one value: GenAI or OpenAI message lists (maybe as JSON), an OpenInference
    ``input.value`` document, or plain text (one message of ``default_role``)."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except (ValueError, RecursionError):  # a client's text nested deeper than Python recurses
            return [{"role": default_role, "content": value}] if value.strip() else []
    if isinstance(value, dict):
        value = value.get("messages", value.get("choices", [value]))
    if isinstance(value, str):
        return [{"role": default_role, "content": value}] if value.strip() else []
    if not isinstance(value, list):
        return []
    messages = []
    for item in value:
        if isinstance(item, dict) and isinstance(item.get("message"), dict):
            item = item["message"]  # an OpenAI choice
        if not isinstance(item, dict):
            continue
        text = message_text(item.get("content", item.get("parts")))
        if text:
            role = item.get("role")
            role = role if isinstance(role, str) and role else default_role
            # JSON's \u0000 decodes to NUL, which PostgreSQL's text and JSONB refuse
            messages.append({"role": clean_text(role), "content": clean_text(text)})
    return messages


def message_text(content: Any) -> str:
    """The text of a message's content: a string, or the text parts of a part list."""
    if isinstance(content, str):
        return content
    if isinstance(content, dict):
        content = [content]
    if not isinstance(content, list):
        return ""
    texts = [
        part.get("content") or part.get("text")
        for part in content
        if isinstance(part, dict) and part.get("type") in TEXT_PART_TYPES
    ]
    return " ".join(text for text in texts if isinstance(text, str) and text)


def _flattened(attributes: dict[str, Any], prefix: str, default_role: str) -> list[Message]:
    """``{prefix}role``/``{prefix}content`` (or OpenInference ``contents.M.message_content.text``) for
    N = 0, 1, ... while present."""
    messages = []
    for index in range(MAX_FLATTENED_MESSAGES):
        head = prefix.format(index)
        role, content = attributes.get(f"{head}role"), attributes.get(f"{head}content")
        if role is None and content is None:
            break
        text = message_text(content) if content is not None else _content_parts(attributes, head)
        if text:
            messages.append(
                {"role": role if isinstance(role, str) and role else default_role, "content": text}
            )
    return messages


def _content_parts(attributes: dict[str, Any], head: str) -> str:
    texts = []
    for index in range(MAX_FLATTENED_MESSAGES):
        text = attributes.get(f"{head}contents.{index}.message_content.text")
        if text is None:
            break
        texts.append(str(text))
    return " ".join(texts)
