"""Create, list, revoke and check project-scoped API keys.

A key reads ``evk_<prefix>_<secret>``: the 8-character prefix is public (it finds the row and is
what ``keys list`` shows), the secret is 32 random bytes. Only the prefix, a per-key random salt and
HMAC-SHA256(salt, secret) are stored. A slow KDF (scrypt, argon2) protects low-entropy passwords;
a 256-bit random secret cannot be guessed offline, so a slow hash would only cost every request
milliseconds. The salt keeps equal secrets from ever hashing alike.
"""

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from sqlalchemy import func, select, update
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.orm import Session

from evallens.auth._errors import (
    InvalidProjectName,
    KeyNotFound,
    KeyRevoked,
    MissingKey,
    ScopeDenied,
    WrongKey,
)
from evallens.db.models.auth import ApiKey, Project
from evallens.settings import project_name_problem

KEY_MARKER = "evk"
PREFIX_CHARS = 8
SECRET_BYTES = 32
SALT_BYTES = 16
LAST_USED_RESOLUTION_S = 60


class Scope(StrEnum):
    """What a key may do: send spans and call the service, read dashboards, also change eval sets
    (promote and review cases: ``write``), or all of it (``admin``)."""

    INGEST = "ingest"
    READ = "read"
    WRITE = "write"
    ADMIN = "admin"

    def allows(self, needed: "Scope") -> bool:
        """True when a key of this scope may do what ``needed`` covers."""
        return self is Scope.ADMIN or self is needed or (self is Scope.WRITE and needed is Scope.READ)


@dataclass(frozen=True)
class Principal:
    """Who a request acts as: the key's project (the tenant), its scope and the key's id."""

    project: str
    scope: Scope
    key_id: int

    def require(self, needed: Scope) -> "Principal":
        """This principal, or ``ScopeDenied`` when its scope does not cover ``needed``."""
        if not self.scope.allows(needed):
            raise ScopeDenied(f"this API key has the {self.scope} scope; {needed} is needed")
        return self


@dataclass(frozen=True)
class KeyInfo:
    """A key as ``keys list`` shows it: never the secret."""

    prefix: str
    project: str
    scope: Scope
    created_at: datetime
    last_used_at: datetime | None
    revoked_at: datetime | None


@dataclass(frozen=True)
class CreatedKey:
    """A new key: ``key`` is shown once and cannot be recovered afterwards."""

    key: str
    info: KeyInfo


def hash_secret(salt: bytes, secret: str) -> bytes:
    """HMAC-SHA256 of the secret keyed by the per-key salt."""
    return hmac.new(salt, secret.encode(), hashlib.sha256).digest()


def ensure_project(session: Session, name: str) -> int:
    """The id of project ``name``, created when missing."""
    session.execute(insert(Project).values(name=name).on_conflict_do_nothing(index_elements=["name"]))
    return int(session.execute(select(Project.id).where(Project.name == name)).scalar_one())


def create_key(session: Session, project: str, scope: Scope = Scope.INGEST) -> CreatedKey:
    """A new key for ``project`` (created when missing); the caller commits."""
    problem = project_name_problem(project)  # no name, or one that would silently be another project
    if problem is not None:
        raise InvalidProjectName(problem)
    project_id = ensure_project(session, project)
    prefix = secrets.token_hex(PREFIX_CHARS // 2)
    secret = secrets.token_urlsafe(SECRET_BYTES)
    salt = secrets.token_bytes(SALT_BYTES)
    row = ApiKey(
        project_id=project_id, prefix=prefix, salt=salt, key_hash=hash_secret(salt, secret), scope=scope
    )
    session.add(row)
    session.flush()
    session.refresh(row)
    info = KeyInfo(prefix, project, scope, row.created_at, None, None)
    return CreatedKey(f"{KEY_MARKER}_{prefix}_{secret}", info)


def list_keys(session: Session, project: str | None = None) -> list[KeyInfo]:
    """Every key (of ``project`` when given), oldest first."""
    query = select(ApiKey, Project.name).join(Project).order_by(ApiKey.created_at, ApiKey.id)
    if project is not None:
        query = query.where(Project.name == project)
    return [_info(key, name) for key, name in session.execute(query)]


def revoke_key(session: Session, prefix: str) -> KeyInfo:
    """Revoke the key with ``prefix`` (the ``evk_`` marker may be included); the caller commits."""
    prefix = prefix.removeprefix(f"{KEY_MARKER}_").split("_", 1)[0]
    found = session.execute(select(ApiKey, Project.name).join(Project).where(ApiKey.prefix == prefix)).first()
    if found is None:
        raise KeyNotFound(f"no API key has the prefix {prefix!r}; `evallens keys list` shows them")
    key, project = found[0], found[1]
    if key.revoked_at is None:
        key.revoked_at = session.execute(select(func.now())).scalar_one()
    return _info(key, project)


def authenticate(session: Session, presented: str | None) -> Principal:
    """The principal of a presented key: ``MissingKey``/``WrongKey`` (401) or ``KeyRevoked`` (403).

    Records the key's last use (at most once a minute); the caller commits.
    """
    if not presented:
        raise MissingKey("an API key is required: send `Authorization: Bearer <key>` or `x-evallens-key`")
    marker, _, rest = presented.strip().partition("_")
    prefix, _, secret = rest.partition("_")
    if marker != KEY_MARKER or not prefix or not secret:
        raise WrongKey("the API key is not valid")
    found = session.execute(select(ApiKey, Project.name).join(Project).where(ApiKey.prefix == prefix)).first()
    if found is None or not hmac.compare_digest(found[0].key_hash, hash_secret(found[0].salt, secret)):
        raise WrongKey("the API key is not valid")
    key, project = found[0], found[1]
    if key.revoked_at is not None:
        raise KeyRevoked(f"the API key {prefix} was revoked")
    _record_use(session, key.id)
    return Principal(project, Scope(key.scope), key.id)


def _record_use(session: Session, key_id: int) -> None:
    recent = func.now() - func.make_interval(0, 0, 0, 0, 0, 0, LAST_USED_RESOLUTION_S)
    session.execute(
        update(ApiKey)
        .where(ApiKey.id == key_id)
        .where((ApiKey.last_used_at.is_(None)) | (ApiKey.last_used_at < recent))
        .values(last_used_at=func.now())
    )


def _info(key: ApiKey, project: str) -> KeyInfo:
    return KeyInfo(key.prefix, project, Scope(key.scope), key.created_at, key.last_used_at, key.revoked_at)
