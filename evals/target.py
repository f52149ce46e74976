"""What the target is: its URLs, its ``/v1/config`` and the fingerprint a run records."""

import hashlib
import json
import math
from dataclasses import dataclass
from typing import Any, NoReturn

import httpx

from evallens.credentials import mask_credentials, masked_url
from evallens.telemetry.messages import clean_text
from evals.errors import EndpointUnreachable, EvalConfigError


def check_url(url: str, what: str) -> str:
    """``url`` when it is one httpx can send a request to; else one line naming ``what`` (a port that
    is no number, an unclosed IPv6 bracket: httpx refuses them before any request, with no HTTP error)."""
    try:
        httpx.URL(url)
    except httpx.InvalidURL as error:
        raise EvalConfigError(f"{what} {masked_url(url)!r} is not a valid URL: {error}") from None
    return url


def base_url(endpoint: str) -> str:
    """The endpoint without a trailing slash or ``/v1``: users may give either form."""
    url = endpoint.rstrip("/")
    return url.removesuffix("/v1")


def api_url(endpoint: str, path: str) -> str:
    """The URL of an OpenAI-style API path (``/chat/completions``) on ``endpoint``."""
    return f"{base_url(endpoint)}/v1{path}"


@dataclass(frozen=True)
class TargetConfig:
    """The target's configuration as it reported it, and the fingerprint that identifies it."""

    config: dict[str, Any]
    fingerprint: str


def fingerprint_of(value: Any) -> str:
    """A short stable hash of any JSON value."""
    canonical = json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


def fetch_target_config(
    endpoint: str, *, timeout_s: float = 10.0, api_key: str | None = None
) -> TargetConfig:
    """``GET /v1/config`` (the reference service), else the model list of any OpenAI-compatible server.

    Raises ``EndpointUnreachable`` when the endpoint answers neither.
    """
    headers = {"authorization": f"Bearer {api_key}"} if api_key else {}
    check_url(endpoint, "the target")
    try:
        with httpx.Client(timeout=timeout_s, headers=headers) as client:
            response = client.get(api_url(endpoint, "/config"))
            if response.status_code == 200:
                config = _json_object(response, endpoint)
                fingerprint = str(config.get("fingerprint") or fingerprint_of(config))
                return TargetConfig(config=config, fingerprint=fingerprint)
            models = client.get(api_url(endpoint, "/models"))
    except httpx.HTTPError as error:
        raise EndpointUnreachable(
            f"cannot reach the target at {masked_url(endpoint)}: {_reason(error)}"
        ) from None
    if models.status_code != 200:
        raise EndpointUnreachable(
            f"{masked_url(endpoint)} is not an OpenAI-compatible endpoint: GET /v1/config gave "
            f"{response.status_code}, "
            f"GET /v1/models gave {models.status_code}"
        )
    listing = _json_object(models, endpoint)
    # stored, shown in reports and fingerprinted: never its credentials (the same server with other
    # credentials is the same target)
    config = {"endpoint": masked_url(base_url(endpoint)), "models": listing.get("data", [])}
    return TargetConfig(config=config, fingerprint=fingerprint_of(config))


def first_model_id(config: dict[str, Any]) -> str | None:
    """A model name from a stored config: its ``model`` key or the first listed model."""
    for key in ("model", "model_name", "served_model_name"):
        value = config.get(key)
        if isinstance(value, str) and value:
            return value
    models = config.get("models")
    if isinstance(models, list) and models and isinstance(models[0], dict) and "id" in models[0]:
        return str(models[0]["id"])
    return None


def _json_object(response: httpx.Response, endpoint: str) -> dict[str, Any]:
    """The body as a JSON object fit for a JSONB column: strict JSON, NUL in its strings as U+FFFD."""
    try:
        body = _storable(json.loads(response.content, parse_constant=_not_json))
    except (ValueError, RecursionError):
        body = None
    if not isinstance(body, dict):
        raise EndpointUnreachable(
            f"{masked_url(str(response.request.url))} did not return a JSON object ({masked_url(endpoint)})"
        )
    return body


def _not_json(constant: str) -> NoReturn:
    raise ValueError(f"{constant} is not JSON")  # Python's json reads NaN and Infinity; JSONB does not


def _storable(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):  # 1e999
        raise ValueError("a number too large for JSONB")
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, list):
        return [_storable(item) for item in value]
    if isinstance(value, dict):
        return {clean_text(key): _storable(item) for key, item in value.items()}
    return value


def _reason(error: httpx.HTTPError) -> str:
    text = str(error).strip().splitlines()
    # httpx quotes what it could not parse (a header line, a URL): it may hold a credential
    return mask_credentials(text[0]) if text else type(error).__name__
