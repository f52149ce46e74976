"""Prometheus metric names the reference service exposes and the eval engine and dashboard read.

vLLM's own engine metrics keep their names (``vllm:*``); evallens' service metrics are defined here
once. Counters are exposed with Prometheus' ``_total`` suffix.
"""

# The reference service (evallens_*)
REQUESTS = "evallens_requests"  # counter, labels: route, status
REQUEST_LATENCY_SECONDS = "evallens_request_latency_seconds"  # histogram
TIME_TO_FIRST_TOKEN_SECONDS = "evallens_time_to_first_token_seconds"  # histogram
TOKENS = "evallens_tokens"  # counter, labels: direction (input|output)
OUTPUT_TOKENS_PER_SECOND = "evallens_output_tokens_per_second"  # histogram, per request after the first token
REQUESTS_IN_FLIGHT = "evallens_requests_in_flight"  # gauge
REQUESTS_QUEUED = "evallens_requests_queued"  # gauge
ERRORS = "evallens_errors"  # counter, labels: kind (timeout|overload|context_length|auth|body_too_large|...)
# counter, labels: cache (exact|semantic), result (hit|miss), project (whose caches: the API key's)
CACHE_LOOKUPS = "evallens_cache_lookups"
DEGRADED = "evallens_degraded"  # counter, labels: reason
BREAKER_STATE = "evallens_breaker_state"  # gauge, labels: breaker; 0 closed, 1 half-open, 2 open

# vLLM engine metrics carried into evals (DESIGN.md)
VLLM_KV_CACHE_USAGE = "vllm:kv_cache_usage_perc"
VLLM_PREFIX_CACHE_QUERIES = "vllm:prefix_cache_queries_total"
VLLM_PREFIX_CACHE_HITS = "vllm:prefix_cache_hits_total"
VLLM_TIME_TO_FIRST_TOKEN = "vllm:time_to_first_token_seconds"
VLLM_NUM_REQUESTS_RUNNING = "vllm:num_requests_running"
VLLM_NUM_REQUESTS_WAITING = "vllm:num_requests_waiting"
VLLM_NUM_PREEMPTIONS = "vllm:num_preemptions_total"
VLLM_REQUEST_QUEUE_TIME = "vllm:request_queue_time_seconds"
