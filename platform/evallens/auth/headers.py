"""Where a request carries its API key: ``Authorization: Bearer <key>`` or ``x-evallens-key: <key>``."""

from collections.abc import Iterable, Mapping

from evallens.telemetry import attributes as attr


def presented_key(headers: Mapping[str, str]) -> str | None:
    """The key in ``headers`` (names lower-case, as HTTP/2, gRPC and Starlette give them), or None."""
    authorization = headers.get(attr.HEADER_AUTHORIZATION, "").strip()
    scheme, _, credentials = authorization.partition(" ")
    if scheme.lower() == attr.AUTHORIZATION_SCHEME and credentials.strip():
        return credentials.strip()
    key = headers.get(attr.HEADER_API_KEY, "").strip()
    return key or None


def metadata_headers(metadata: Iterable[tuple[str, str | bytes]]) -> dict[str, str]:
    """gRPC invocation metadata as a header dict (binary ``-bin`` entries are skipped)."""
    return {name.lower(): value for name, value in metadata if isinstance(value, str)}
