"""Credentials masked out of text and URLs, wherever evallens shows or stores what it was given.

``mask_credentials`` masks them in any text (an engine's error, a log line): a URL's user info,
``Bearer``/``Basic`` tokens, the value of a key, token, secret or password field, API keys of the usual
shapes, long opaque tokens. ``masked_url`` masks a URL alone (an engine's, a judge's, an eval target's):
its user info and the values of its credential query parameters, and nothing else, so that what tells
one server from another is kept.
"""

import re
from collections.abc import Callable
from urllib.parse import unquote_plus, urlsplit, urlunsplit

__all__ = ["REDACTED", "mask_credentials", "masked_excerpt", "masked_url"]

REDACTED = "[REDACTED]"

# a field or query parameter named so holds a credential: api_key, access_token, X-Api-Key, password,
# Authorization ("prompt_tokens" is a count: "tokens" is no such name)
_CREDENTIAL_NAME = re.compile(r"(?i)(?:api[_-]?key|token|secret|password|passwd|authorization|credentials?)$")
_QUERY_CREDENTIAL_NAME = re.compile(r"(?i)key|token|sig|secret|password|auth")
_FIELD = re.compile(
    r"(?<![\w-])([\w-]+)([\"']?\s*[:=]\s*[\"']?)(?!bearer\b|basic\b|\[)([^\s\"',;&}\]]+)", re.I
)
_QUERY_PARAMETER = re.compile(r"([?&])([\w-]+)=([^&\s'\"]+)")


def _mask_field(match: re.Match[str]) -> str:
    name, between, _ = match.groups()
    return f"{name}{between}{REDACTED}" if _CREDENTIAL_NAME.search(name) else match[0]


def _mask_query_parameter(match: re.Match[str]) -> str:
    mark, name, _ = match.groups()
    return f"{mark}{name}={REDACTED}" if _QUERY_CREDENTIAL_NAME.search(name) else match[0]


_CREDENTIALS: tuple[tuple[re.Pattern[str], Callable[[re.Match[str]], str] | str], ...] = (
    # a URL's user info: scheme://user:password@host
    (re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^\s/@'\"]+@"), rf"\1{REDACTED}@"),
    (re.compile(r"(?i)\b(bearer|basic)\s+[\w.~+/=-]+"), rf"\1 {REDACTED}"),
    (_QUERY_PARAMETER, _mask_query_parameter),  # ?key=..., &sig=...
    (_FIELD, _mask_field),  # api_key=..., "token": "...", Authorization: ..., password: ...
    # API keys of the usual shapes (OpenAI, Anthropic, Hugging Face, GitHub, Slack, AWS, Google, JWTs)
    (
        re.compile(
            r"\b(?:(?:sk|rk|pk)-[\w-]{6,}|hf_[A-Za-z0-9]{6,}|gh[pousr]_[A-Za-z0-9]{6,}|github_pat_\w{6,}"
            r"|xox[abprs]-[\w-]{6,}|(?:AKIA|ASIA)[0-9A-Z]{12,}|AIza[\w-]{20,}|eyJ[\w-]{6,}\.[\w.-]+)"
        ),
        REDACTED,
    ),
    # any other long opaque token: 32 or more letters, digits, dashes and underscores, digits among them
    (re.compile(r"(?<![\w-])(?=[\w-]*\d)(?=[\w-]*[A-Za-z])[\w-]{32,}(?![\w-])"), REDACTED),
)


def mask_credentials(text: str) -> str:
    """``text`` with every credential it holds as ``[REDACTED]``."""
    for pattern, replacement in _CREDENTIALS:
        text = pattern.sub(replacement, text)
    return text


# how much of a text ``masked_excerpt`` masks: far more than any excerpt kept, so that masking (which can
# lengthen a short credential) never pulls unmasked text into the excerpt, and a huge error page costs little
EXCERPT_MASKED_CHARS = 4000


def masked_excerpt(text: str, max_chars: int) -> str:
    """The first ``max_chars`` characters of ``text`` (what a server or a proxy before it said went
    wrong), its credentials masked before the cut: an error body may echo the key it refused."""
    return mask_credentials(text[:EXCERPT_MASKED_CHARS])[:max_chars]


def masked_url(url: str) -> str:
    """``url`` with its user info and the values of its credential query parameters (``api_key``,
    ``token``, ``sig``...) as ``[REDACTED]``; a URL without either, unchanged to the character. The same
    server with other credentials masks alike; another scheme, host, port, path or other parameter does
    not."""
    try:
        parts = urlsplit(url)
    except ValueError:  # an unclosed IPv6 bracket: no parts to tell apart, masked as any text is
        return mask_credentials(url)
    if not parts.netloc:  # no scheme://: no part is surely the host, so all before the last "@" goes
        _, at, rest = url.rpartition("@")
        return f"{REDACTED}@{rest}" if at else url
    _, at, host = parts.netloc.rpartition("@")  # a password may hold "@": the host follows the last one
    netloc = f"{REDACTED}@{host}" if at else parts.netloc
    query = "&".join(_masked_query_parameter(parameter) for parameter in parts.query.split("&"))
    if (netloc, query) == (parts.netloc, parts.query):
        return url
    return urlunsplit(parts._replace(netloc=netloc, query=query))


def _masked_query_parameter(parameter: str) -> str:
    name, equals, _ = parameter.partition("=")
    return f"{name}={REDACTED}" if equals and _QUERY_CREDENTIAL_NAME.search(unquote_plus(name)) else parameter
