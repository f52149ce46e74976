"""Span attribute and header names, defined once.

GenAI names follow the OpenTelemetry GenAI semantic conventions; OpenInference names are read so
traces from other tools land too. There is no standard for cost, tenant or eval links yet, so
evallens defines its own under ``evallens.*``.
"""

# OpenTelemetry GenAI semantic conventions
GEN_AI_OPERATION_NAME = "gen_ai.operation.name"
GEN_AI_PROVIDER_NAME = "gen_ai.provider.name"
GEN_AI_SYSTEM = "gen_ai.system"  # deprecated predecessor of gen_ai.provider.name
GEN_AI_REQUEST_MODEL = "gen_ai.request.model"
GEN_AI_RESPONSE_MODEL = "gen_ai.response.model"
GEN_AI_REQUEST_TEMPERATURE = "gen_ai.request.temperature"
GEN_AI_REQUEST_TOP_P = "gen_ai.request.top_p"
GEN_AI_REQUEST_MAX_TOKENS = "gen_ai.request.max_tokens"
GEN_AI_REQUEST_SEED = "gen_ai.request.seed"
GEN_AI_RESPONSE_ID = "gen_ai.response.id"
GEN_AI_RESPONSE_FINISH_REASONS = "gen_ai.response.finish_reasons"
GEN_AI_USAGE_INPUT_TOKENS = "gen_ai.usage.input_tokens"
GEN_AI_USAGE_OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
GEN_AI_USAGE_PROMPT_TOKENS = "gen_ai.usage.prompt_tokens"  # deprecated
GEN_AI_USAGE_COMPLETION_TOKENS = "gen_ai.usage.completion_tokens"  # deprecated
GEN_AI_RETRIEVAL_DOCUMENTS = "gen_ai.retrieval.documents"
GEN_AI_SERVER_TIME_TO_FIRST_TOKEN = "gen_ai.server.time_to_first_token"
# the chat input/output as JSON: [{"role": "user", "parts": [{"type": "text", "content": ...}]}]
GEN_AI_INPUT_MESSAGES = "gen_ai.input.messages"
GEN_AI_OUTPUT_MESSAGES = "gen_ai.output.messages"
# earlier forms of the same content: one JSON or text value, or flattened gen_ai.prompt.N.role/.content
GEN_AI_PROMPT = "gen_ai.prompt"
GEN_AI_COMPLETION = "gen_ai.completion"
# GenAI content events, on spans or as OTLP log records (event name, or the event.name attribute)
EVENT_NAME = "event.name"
EVENT_GEN_AI_CHOICE = "gen_ai.choice"  # body {"index", "finish_reason", "message": {"role", "content"}}
EVENT_GEN_AI_MESSAGE_SUFFIX = ".message"  # gen_ai.user.message, gen_ai.system.message...: {"content"}
EVENT_GEN_AI_OPERATION_DETAILS = "gen_ai.client.inference.operation.details"  # the messages as attributes
EVENT_GEN_AI_CONTENT_PROMPT = "gen_ai.content.prompt"  # attribute gen_ai.prompt
EVENT_GEN_AI_CONTENT_COMPLETION = "gen_ai.content.completion"  # attribute gen_ai.completion

# OpenInference
LLM_MODEL_NAME = "llm.model_name"
LLM_TOKEN_COUNT_PROMPT = "llm.token_count.prompt"
LLM_TOKEN_COUNT_COMPLETION = "llm.token_count.completion"
LLM_TOKEN_COUNT_TOTAL = "llm.token_count.total"
OPENINFERENCE_SPAN_KIND = "openinference.span.kind"
INPUT_VALUE = "input.value"
OUTPUT_VALUE = "output.value"
# flattened chat messages: llm.input_messages.N.message.role / .content
LLM_INPUT_MESSAGES = "llm.input_messages"
LLM_OUTPUT_MESSAGES = "llm.output_messages"
RETRIEVAL_DOCUMENTS_PREFIX = "retrieval.documents"


def retrieval_document_id(index: int) -> str:
    """OpenInference attribute holding the id of the ``index``-th retrieved document."""
    return f"{RETRIEVAL_DOCUMENTS_PREFIX}.{index}.document.id"


def retrieval_document_score(index: int) -> str:
    """OpenInference attribute holding the score of the ``index``-th retrieved document."""
    return f"{RETRIEVAL_DOCUMENTS_PREFIX}.{index}.document.score"


# OpenTelemetry resource
SERVICE_NAME = "service.name"

# OpenTelemetry general conventions
ERROR_TYPE = "error.type"
HTTP_RESPONSE_STATUS_CODE = "http.response.status_code"

# evallens' own names
COST_USD = "evallens.cost_usd"
TENANT = "evallens.tenant"
USER = "evallens.user"
FEATURE = "evallens.feature"
PROJECT = "evallens.project"
# the project of spans (and everything else) that name none
DEFAULT_PROJECT = "default"
EVAL_RUN_ID = "evallens.eval.run_id"
EVAL_CASE_ID = "evallens.eval.case_id"
PROMPT_HASH = "evallens.prompt.hash"
PROMPT_LENGTH = "evallens.prompt.length_chars"
TIME_TO_FIRST_TOKEN_S = "evallens.ttft_s"
ENGINE_TIME_S = "evallens.engine_time_s"
# requests the engine served at once during this call; its GPU time is shared among them
ENGINE_CONCURRENT_REQUESTS = "evallens.engine.concurrent_requests"
CACHE_EXACT_HIT = "evallens.cache.exact.hit"
CACHE_SEMANTIC_HIT = "evallens.cache.semantic.hit"
CACHE_SEMANTIC_SIMILARITY = "evallens.cache.semantic.similarity"
DEGRADED = "evallens.degraded"
DEGRADED_REASON = "evallens.degraded.reason"
TIMEOUT = "evallens.timeout"
ROUTE = "evallens.route"
STREAM = "evallens.stream"
QUEUE_TIME_S = "evallens.queue_time_s"
ENGINE_QUEUE_TIME_S = "evallens.engine_queue_time_s"
OUTPUT_TOKENS_PER_SECOND = "evallens.output_tokens_per_s"
CONFIG_FINGERPRINT = "evallens.config.fingerprint"
RETRIEVAL_QUERY_LENGTH = "evallens.retrieval.query.length_chars"
RETRIEVAL_FUSION = "evallens.retrieval.fusion"
RETRIEVAL_TOP_K = "evallens.retrieval.top_k"
RETRIEVAL_NUM_RESULTS = "evallens.retrieval.num_results"
RETRIEVAL_LEG = "evallens.retrieval.leg"  # vector | keyword
RETRIEVAL_LEG_IDS = "evallens.retrieval.leg.ids"  # chunk ids in the leg's rank order
RETRIEVAL_LEG_SCORES = "evallens.retrieval.leg.scores"
RETRIEVAL_CHUNK_IDS = "evallens.retrieval.chunk_ids"  # the chunks cited in the answer
RETRIEVAL_BEST_RELEVANCE = "evallens.retrieval.best_relevance"
RERANK_METHOD = "evallens.rerank.method"
RERANK_NUM_CANDIDATES = "evallens.rerank.num_candidates"
COMPRESS_TOKENS_BEFORE = "evallens.compress.tokens_before"
COMPRESS_TOKENS_AFTER = "evallens.compress.tokens_after"
COMPRESS_SENTENCES_DROPPED = "evallens.compress.sentences_dropped"
PROMPT_TEMPLATE_VERSION = "evallens.prompt.template_version"
CACHE_NAME = "evallens.cache.name"  # exact | semantic
CACHE_HIT = "evallens.cache.hit"
BREAKER_NAME = "evallens.breaker.name"
BREAKER_STATE = "evallens.breaker.state"  # closed | half_open | open
BUDGET_MS = "evallens.budget_ms"
GUARD_SCOPE_DECLINED = "evallens.guard.scope.declined"
GUARD_SCOPE_RELEVANCE = "evallens.guard.scope.relevance"
GUARD_SAFETY_REFUSED = "evallens.guard.safety.refused"
GUARD_SAFETY_CATEGORY = "evallens.guard.safety.category"
KB_DOCUMENT_ID = "evallens.kb.document_id"
KB_NUM_CHUNKS_EMBEDDED = "evallens.kb.num_chunks_embedded"
KB_NUM_CHUNKS_DELETED = "evallens.kb.num_chunks_deleted"
# the project's knowledge-base generation: the one a change made (upsert), the one an answer read (request)
KB_GENERATION = "evallens.kb.generation"
FEEDBACK_SCORE = "evallens.feedback.score"
FEEDBACK_COMMENT = "evallens.feedback.comment"
FEEDBACK_TARGET_TRACE_ID = "evallens.feedback.trace_id"
FEEDBACK_ID = "evallens.feedback.id"

# Span names of the reference service's RAG stages (children of the chat request span)
SPAN_RETRIEVAL = "retrieval"  # gen_ai.operation.name = retrieval
SPAN_RETRIEVAL_VECTOR = "retrieval.vector"
SPAN_RETRIEVAL_KEYWORD = "retrieval.keyword"
SPAN_RETRIEVAL_FUSE = "retrieval.fuse"
SPAN_RETRIEVAL_RERANK = "retrieval.rerank"
SPAN_RETRIEVAL_COMPRESS = "retrieval.compress"
SPAN_CACHE_EXACT = "cache.exact"
SPAN_CACHE_SEMANTIC = "cache.semantic"
SPAN_GUARD_SAFETY = "guard.safety"
SPAN_GUARD_SCOPE = "guard.scope"
SPAN_EMBED_QUERY = "embed.query"  # the question's embedding, shared by the semantic cache and retrieval
SPAN_FEEDBACK = "feedback"
OPERATION_RETRIEVAL = "retrieval"
OPENINFERENCE_KIND_RETRIEVER = "RETRIEVER"
OPENINFERENCE_KIND_RERANKER = "RERANKER"

# HTTP headers the eval runner and users send to the reference service
HEADER_TENANT = "x-evallens-tenant"
HEADER_USER = "x-evallens-user"
HEADER_FEATURE = "x-evallens-feature"
HEADER_EVAL_RUN_ID = "x-evallens-eval-run-id"
HEADER_EVAL_CASE_ID = "x-evallens-eval-case-id"
HEADER_API_KEY = "x-evallens-key"
# the reference service answers with the request's trace id
HEADER_TRACE_ID = "x-trace-id"
# API keys: `Authorization: Bearer <key>` or `x-evallens-key: <key>` (also in OTEL_EXPORTER_OTLP_HEADERS)
HEADER_AUTHORIZATION = "authorization"
AUTHORIZATION_SCHEME = "bearer"
HEADER_RETRY_AFTER = "retry-after"
# `Cache-Control: no-cache` on a chat request: answer without the exact or semantic response cache
# (`evallens eval run --no-cache`, for model-only comparisons)
HEADER_CACHE_CONTROL = "cache-control"
CACHE_CONTROL_NO_CACHE = "no-cache"
