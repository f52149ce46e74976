"""An engine's words as a client may read them: credentials and the prompt's text masked, then cut short.

An engine's error may quote how it is reached or what it was sent: an upstream's error can hold its API
key, its URL with a user and password, or the messages it was sent (the system prompt and the retrieved
context with them). A client reads ``[REDACTED]`` for credentials (a URL's user info, ``Bearer``/``Basic``
tokens, the value of a key, token, secret or password field, API keys of the usual shapes, long opaque
tokens) and ``[PROMPT]`` for any run of the prompt's text of at least ``MIN_PROMPT_CHARS`` letters and
digits (compared on letters and digits alone, so that JSON escapes or quotes around a quoted prompt do not
hide it). Masked first (the first ``MAX_MASKED_CHARS`` characters), cut after: a prompt quoted whole is
not cut into a shorter run that escapes the mask.

``masked_url`` masks an engine's URL alone (as ``/v1/config`` shows it): its user info and the values of
its credential query parameters, and nothing else, so that what tells one server from another is kept.
"""

import re
from collections.abc import Callable, Sequence
from urllib.parse import unquote_plus, urlsplit, urlunsplit

__all__ = ["MAX_MASKED_CHARS", "masked_url", "safe_excerpt"]

MAX_MASKED_CHARS = 8192  # of an engine's words read for an excerpt (a traceback, at worst)
MIN_PROMPT_CHARS = 20  # about four words: shorter runs are the engine's own words as often as the prompt's
REDACTED = "[REDACTED]"
PROMPT = "[PROMPT]"

_NOT_LETTERS = re.compile(r"[\W_]+")
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


def safe_excerpt(text: str, prompt: Sequence[str], max_chars: int) -> str:
    """``text`` (an engine's words) with credentials and any text of ``prompt`` (the messages' contents)
    masked, then cut to ``max_chars``."""
    text = _mask_prompt(text[:MAX_MASKED_CHARS], prompt)
    for pattern, replacement in _CREDENTIALS:
        text = pattern.sub(replacement, text)
    return text if len(text) <= max_chars else text[:max_chars] + "..."


def masked_url(url: str) -> str:
    """``url`` with its user info and the values of its credential query parameters (``api_key``,
    ``token``, ``sig``...) as ``[REDACTED]``; a URL without either, unchanged to the character. The same
    server with other credentials masks alike; another scheme, host, port, path or other parameter does
    not."""
    try:
        parts = urlsplit(url)
    except ValueError:  # an unclosed IPv6 bracket: no parts to tell apart, masked as any text is
        return safe_excerpt(url, (), MAX_MASKED_CHARS)
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


def _mask_prompt(text: str, contents: Sequence[str]) -> str:
    """``text`` with each run of letters and digits that the prompt also holds (``MIN_PROMPT_CHARS`` of
    them at least, punctuation, spaces and escapes between them ignored) replaced by ``[PROMPT]``."""
    prompt = "\n".join(_NOT_LETTERS.sub("", content.lower()) for content in contents)
    letters, spans = _letters(text)
    starts = range(len(letters) - MIN_PROMPT_CHARS + 1)
    windows = {letters[start : start + MIN_PROMPT_CHARS] for start in starts}
    # one pass over the prompt, however long the text: a long prompt is searched once, not per window
    quoted = windows.intersection(prompt[start : start + MIN_PROMPT_CHARS] for start in range(len(prompt)))
    covered = [False] * len(letters)
    for start in starts:
        if letters[start : start + MIN_PROMPT_CHARS] in quoted:
            covered[start : start + MIN_PROMPT_CHARS] = [True] * MIN_PROMPT_CHARS
    pieces: list[str] = []
    done = 0  # position in ``text`` up to which ``pieces`` hold it
    index = 0
    while index < len(letters):
        if not covered[index]:
            index += 1
            continue
        end = index
        while end + 1 < len(letters) and covered[end + 1]:
            end += 1
        pieces += [text[done : spans[index][0]], PROMPT]
        done = spans[end][1]
        index = end + 1
    pieces.append(text[done:])
    return "".join(pieces)


# A character, or a JSON or Python escape of one: "\n" or '\"' stand for no letter, "\u00e9" for "é"
_CHARACTER = re.compile(r"\\(?:u([0-9a-fA-F]{4})|x([0-9a-fA-F]{2})|U([0-9a-fA-F]{8})|.)|.", re.S)


def _letters(text: str) -> tuple[str, list[tuple[int, int]]]:
    """The letters and digits ``text`` holds or escapes, in lower case, and where each sits in it."""
    letters: list[str] = []
    spans: list[tuple[int, int]] = []
    for match in _CHARACTER.finditer(text):
        code = match[1] or match[2] or match[3]
        char = chr(int(code, 16)) if code else match[0]
        if len(char) == 1 and char.isalnum():
            lower = char.lower()
            letters.append(lower if len(lower) == 1 else char)  # one character each, as their spans
            spans.append(match.span())
    return "".join(letters), spans
