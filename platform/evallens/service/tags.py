"""Who asked and why, from the ``x-evallens-*`` headers: every API area tags its spans with them."""

from dataclasses import dataclass

from starlette.datastructures import Headers

from evallens.settings.collector import DEFAULT_MAX_KEY_CHARS
from evallens.telemetry import attributes as attr
from evallens.telemetry.attributes import DEFAULT_PROJECT


class InvalidTag(ValueError):
    """A tag header the service cannot keep as sent (a 400 naming ``header``)."""

    def __init__(self, message: str, header: str) -> None:
        super().__init__(message)
        self.header = header


@dataclass(frozen=True)
class RequestTags:
    """Who asked and why: tenant, user, feature, and the eval run and case when the eval runner asks."""

    tenant: str | None = None
    user: str | None = None
    feature: str | None = None
    eval_run_id: str | None = None
    eval_case_id: str | None = None
    no_cache: bool = False
    # The API key's project when auth is on: the one tenant the service vouches for (never a header).
    project: str | None = None

    @property
    def knowledge_base(self) -> str:
        """The project whose knowledge base the request reads and writes: the API key's with auth, the
        default project's without (never a header: a client must not pick another's documents)."""
        return self.project or DEFAULT_PROJECT

    @classmethod
    def from_headers(cls, headers: Headers) -> "RequestTags":
        """Read the ``x-evallens-*`` headers; ``InvalidTag`` when one cannot be kept as sent."""
        return cls(
            tenant=_tag(headers, attr.HEADER_TENANT),
            user=_tag(headers, attr.HEADER_USER),
            feature=_tag(headers, attr.HEADER_FEATURE),
            eval_run_id=_tag(headers, attr.HEADER_EVAL_RUN_ID),
            eval_case_id=_tag(headers, attr.HEADER_EVAL_CASE_ID),
            no_cache=_asks_no_cache(headers.get(attr.HEADER_CACHE_CONTROL)),
        )

    def span_attributes(self) -> dict[str, str]:
        """The tags that are set, under their evallens attribute names."""
        named = {
            attr.TENANT: self.tenant,
            attr.USER: self.user,
            attr.FEATURE: self.feature,
            attr.EVAL_RUN_ID: self.eval_run_id,
            attr.EVAL_CASE_ID: self.eval_case_id,
        }
        return {name: value for name, value in named.items() if value is not None}


def _tag(headers: Headers, name: str) -> str | None:
    """The tag header ``name``; ``InvalidTag`` when it is longer than the collector keeps or it holds
    anything but printable ASCII: a tab passes HTTP parsers, and other bytes arrive decoded as Latin-1
    (UTF-8 "café" as "cafÃ©"), a label no client sent."""
    value = headers.get(name)
    if value is None:
        return None
    # the collector refuses a span whose tenant, user, feature or eval ids are longer: a longer tag lost
    # the request's whole trace, answered 200 all the same
    if len(value) > DEFAULT_MAX_KEY_CHARS:
        raise InvalidTag(f"{name} is {len(value)} characters long; at most {DEFAULT_MAX_KEY_CHARS}.", name)
    if not all(" " <= char <= "~" for char in value):
        raise InvalidTag(f"{name} must be printable ASCII (no tab, no control character).", name)
    return value


def _asks_no_cache(cache_control: str | None) -> bool:
    """``Cache-Control: no-cache`` (or ``no-store``): the client wants an answer made for it now."""
    directives = {part.strip().lower() for part in (cache_control or "").split(",")}
    return bool(directives & {attr.CACHE_CONTROL_NO_CACHE, "no-store"})
