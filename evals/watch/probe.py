"""Is the target ready, and what configuration does it serve? Read only from a ready target."""

import hashlib
from dataclasses import dataclass
from pathlib import Path

import httpx

from evallens.credentials import masked_url
from evals.errors import EndpointUnreachable, EvalSetError
from evals.target import api_url, base_url, fetch_target_config

PROBE_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class Probe:
    """One look at the target: ready or not (and why), and the fingerprint it serves when ready."""

    ready: bool
    detail: str  # why it is not ready, or why its fingerprint could not be read
    fingerprint: str | None = None


def check_ready(endpoint: str, ready_url: str | None, api_key: str | None = None) -> tuple[bool, str]:
    """The readiness probe: ``ready_url`` (any 2xx is ready), else ``/readyz``; a target without
    ``/readyz`` (404) is ready once ``/v1/models`` answers 200."""
    headers = {"authorization": f"Bearer {api_key}"} if api_key else {}
    url = ready_url or f"{base_url(endpoint)}/readyz"
    try:
        with httpx.Client(timeout=PROBE_TIMEOUT_S, headers=headers) as client:
            response = client.get(url)
            if response.status_code == 404 and ready_url is None:
                models = client.get(api_url(endpoint, "/models"))
                return models.status_code == 200, f"GET /v1/models answered {models.status_code}"
    except httpx.HTTPError as error:
        return False, f"{masked_url(url)} unreachable ({type(error).__name__})"
    return 200 <= response.status_code < 300, f"{masked_url(url)} answered {response.status_code}"


def watched_fingerprint(endpoint: str, config_file: Path | None, api_key: str | None = None) -> str:
    """What watch compares between polls: a config file's content hash, or the target's fingerprint."""
    if config_file is not None:
        try:
            return hashlib.sha256(config_file.read_bytes()).hexdigest()[:16]
        except OSError as error:
            raise EvalSetError(
                f"{config_file}: cannot read the watched config file: {error.strerror}"
            ) from None
    return fetch_target_config(endpoint, api_key=api_key).fingerprint


def probe(endpoint: str, ready_url: str | None, config_file: Path | None, api_key: str | None) -> Probe:
    """Ready first, then the fingerprint, then ready again: a config read while the target starts or
    stops (a model still loading reports an incomplete config) is never used."""
    ready, detail = check_ready(endpoint, ready_url, api_key)
    if not ready:
        return Probe(False, f"target not ready ({detail})")
    try:
        fingerprint = watched_fingerprint(endpoint, config_file, api_key)
    except EndpointUnreachable as error:
        return Probe(False, f"target not ready ({error})")
    except EvalSetError as error:  # an editor saving the file may replace it: wait for it to come back
        return Probe(False, str(error))
    ready, detail = check_ready(endpoint, ready_url, api_key)
    if not ready:
        return Probe(False, f"target not ready ({detail})")
    return Probe(True, detail, fingerprint)
