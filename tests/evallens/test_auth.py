"""The core of API keys: the token bucket, the safe-bind check, header parsing, key lifecycle, and the
gate's cache of accepted and refused keys."""

import json
import logging
import secrets
import subprocess
import sys
import uuid
from collections.abc import Iterator

import psycopg
import pytest
from psycopg import sql
from sqlalchemy import Engine, event
from sqlalchemy.orm import Session

from evallens.auth import (
    AuthFailed,
    AuthGate,
    AuthUnavailable,
    KeyNotFound,
    KeyRevoked,
    MissingKey,
    RateLimiter,
    Scope,
    ScopeDenied,
    UnsafeBind,
    WrongKey,
    authenticate,
    create_key,
    ensure_project,
    ensure_safe_bind,
    list_keys,
    presented_key,
    revoke_key,
)
from evallens.auth.keys import hash_secret
from evallens.db import create_db_engine, create_session_factory
from evallens.db.errors import POSTGRES_AWAY_RETRY_AFTER_S
from evallens.db.models.auth import ApiKey
from evallens.db.server import DatabaseServer, embedded_url
from evallens.settings import AuthSettings, child_environment
from tests.conftest import REPO_ROOT, TEMPLATE_DATABASE


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_token_bucket_refills_at_its_rate_per_key() -> None:
    clock = FakeClock()
    limiter = RateLimiter(rate_per_s=2.0, burst=3, clock=clock)
    assert [limiter.acquire(1) for _ in range(3)] == [0.0, 0.0, 0.0]
    assert limiter.acquire(1) == pytest.approx(0.5)
    assert limiter.acquire(2) == 0.0  # another key has its own bucket
    clock.now += 0.5
    assert limiter.acquire(1) == 0.0
    clock.now += 100
    assert [limiter.acquire(1) for _ in range(4)][-1] > 0  # refills to the burst, never beyond


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.2", "::1", "[::1]", "localhost"])
def test_loopback_binds_need_no_auth(host: str) -> None:
    ensure_safe_bind(host, auth_enabled=False, insecure=False)


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.10", "example.com"])
def test_other_binds_need_auth_or_insecure(host: str, caplog: pytest.LogCaptureFixture) -> None:
    with pytest.raises(UnsafeBind, match="EVALLENS_AUTH_ENABLED=true") as refused:
        ensure_safe_bind(host, auth_enabled=False, insecure=False)
    assert "\n" not in str(refused.value)
    ensure_safe_bind(host, auth_enabled=True, insecure=False)
    with caplog.at_level(logging.WARNING):
        ensure_safe_bind(host, auth_enabled=False, insecure=True)
    assert "WITHOUT authentication" in caplog.text


def test_presented_key_from_either_header() -> None:
    assert presented_key({"authorization": "Bearer evk_a_b"}) == "evk_a_b"
    assert presented_key({"authorization": "bearer  evk_a_b "}) == "evk_a_b"
    assert presented_key({"x-evallens-key": "evk_c_d"}) == "evk_c_d"
    assert presented_key({"authorization": "Basic xyz"}) is None
    assert presented_key({}) is None


def test_key_lifecycle(database_url: str) -> None:
    engine = create_db_engine(database_url)
    try:
        with Session(engine) as session, session.begin():
            created = create_key(session, "alpha", Scope.READ)
            principal = authenticate(session, created.key)
            assert (principal.project, principal.scope) == ("alpha", Scope.READ)
            with pytest.raises(ScopeDenied):
                principal.require(Scope.INGEST)
            with pytest.raises(MissingKey):
                authenticate(session, None)
            with pytest.raises(WrongKey):
                authenticate(session, created.key + "x")
            revoke_key(session, created.info.prefix)
            with pytest.raises(KeyRevoked):
                authenticate(session, created.key)
            with pytest.raises(KeyNotFound):
                revoke_key(session, "00000000")
            (listed,) = list_keys(session, "alpha")
            assert listed.prefix == created.info.prefix
            assert listed.last_used_at is not None and listed.revoked_at is not None
    finally:
        engine.dispose()


@pytest.mark.parametrize(
    ("command", "variable"),
    [(["collector"], "EVALLENS_COLLECTOR_HTTP_HOST"), (["dashboard"], "EVALLENS_DASHBOARD_HOST")],
)
def test_cli_refuses_a_public_bind_without_auth(command: list[str], variable: str) -> None:
    environment = child_environment({variable: "0.0.0.0", "EVALLENS_AUTH_ENABLED": "false"})
    environment.pop("EVALLENS_DASHBOARD_PASSWORD", None)
    finished = subprocess.run(
        [sys.executable, "-m", "evallens", *command],
        cwd=REPO_ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert finished.returncode == 2
    lines = finished.stderr.strip().splitlines()
    assert len(lines) == 1 and "EVALLENS_AUTH_ENABLED=true" in lines[0], finished.stderr
    assert finished.stdout == ""


def evallens(database_url: str, *arguments: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "evallens", *arguments],
        cwd=REPO_ROOT,
        env=child_environment({"EVALLENS_DATABASE_URL": database_url}),
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_keys_cli_prints_the_key_once(database_url: str) -> None:
    created = evallens(database_url, "keys", "create", "--project", "alpha", "--scope", "read")
    assert created.returncode == 0, created.stderr
    key = created.stdout.strip()
    prefix = key.split("_")[1]
    assert key.startswith("evk_") and "not shown again" in created.stderr
    listed = evallens(database_url, "keys", "list")
    assert prefix in listed.stdout and "alpha" in listed.stdout and key not in listed.stdout
    revoked = evallens(database_url, "keys", "revoke", prefix)
    assert revoked.returncode == 0 and "revoked" in revoked.stdout
    missing = evallens(database_url, "keys", "revoke", "ffffffff")
    assert missing.returncode == 2 and "keys list" in missing.stderr


@pytest.mark.parametrize("project", ["", "  "], ids=["empty", "blank"])
def test_keys_cli_refuses_a_project_without_a_name(database_url: str, project: str) -> None:
    """A key was created for a project named '' (or blanks): a tenant no report could name."""
    refused = evallens(database_url, "keys", "create", "--project", project)
    assert refused.returncode == 2 and refused.stdout == "", refused.stdout
    assert refused.stderr.strip() == "evallens: error: a project needs a name, not an empty or blank one"
    listed = evallens(database_url, "keys", "list", "--project", project, "--format", "json")
    assert listed.returncode == 0 and json.loads(listed.stdout) == [], listed.stdout


def test_keys_cli_refuses_a_project_name_padded_with_whitespace(database_url: str) -> None:
    """'alpha ' was a project beside 'alpha': its key wrote traces no viewer of 'alpha' would see."""
    refused = evallens(database_url, "keys", "create", "--project", "alpha ")
    assert refused.returncode == 2 and refused.stdout == "", refused.stdout
    assert refused.stderr.strip() == (
        "evallens: error: project name 'alpha ' starts or ends with whitespace; did you mean 'alpha'?"
    )
    listed = evallens(database_url, "keys", "list", "--json")
    assert listed.returncode == 0 and "alpha" not in listed.stdout, listed.stdout


def statements_sent(engine: Engine) -> list[str]:
    """Every SQL statement ``engine`` sends to PostgreSQL from now on, in order."""
    sent: list[str] = []
    event.listen(engine, "before_cursor_execute", lambda *args: sent.append(args[2]))
    return sent


def unknown_key() -> str:
    """A well-formed key that no row holds (yet)."""
    return f"evk_{secrets.token_hex(4)}_{secrets.token_urlsafe(32)}"


def store_key(engine: Engine, key: str, project: str) -> None:
    """Store ``key``, chosen by the test beforehand, for ``project`` as ``keys create`` stores one."""
    _, prefix, secret = key.split("_", 2)
    salt = secrets.token_bytes(16)
    with Session(engine) as session, session.begin():
        project_id = ensure_project(session, project)
        key_hash = hash_secret(salt, secret)
        session.add(
            ApiKey(project_id=project_id, prefix=prefix, salt=salt, key_hash=key_hash, scope="ingest")
        )


def bearer(key: str) -> dict[str, str]:
    return {"authorization": f"Bearer {key}"}


def cached_gate(engine: Engine, clock: FakeClock) -> AuthGate:
    settings = AuthSettings(auth_enabled=True, auth_cache_ttl_s=5)
    return AuthGate(settings, create_session_factory(engine), clock)


def test_a_wrong_key_costs_postgres_one_check_per_ttl(database_url: str) -> None:
    """A client repeating a wrong key is answered from the cache, not by a query per request; the
    refusal lasts the cache TTL, as an accepted key's answer does."""
    engine = create_db_engine(database_url)
    clock = FakeClock()
    gate, sent = cached_gate(engine, clock), statements_sent(engine)
    wrong = unknown_key()
    for _ in range(20):
        with pytest.raises(WrongKey):
            gate.admit(bearer(wrong), Scope.INGEST)
    assert len(sent) == 1
    for _ in range(20):
        with pytest.raises(MissingKey):
            gate.admit({}, Scope.INGEST)
    assert len(sent) == 1  # a missing key never needs PostgreSQL
    clock.now += 5.1
    with pytest.raises(WrongKey):
        gate.admit(bearer(wrong), Scope.INGEST)
    assert len(sent) == 2  # the refusal expired: checked again
    engine.dispose()


def test_a_key_refused_before_it_exists_is_accepted_after_the_ttl(database_url: str) -> None:
    """A cached refusal lasts the cache TTL, no longer: a key stored after it was refused works then."""
    engine = create_db_engine(database_url)
    clock = FakeClock()
    gate, key = cached_gate(engine, clock), unknown_key()
    with pytest.raises(WrongKey):
        gate.admit(bearer(key), Scope.INGEST)
    store_key(engine, key, "beta")
    clock.now += 4.9
    with pytest.raises(WrongKey):
        gate.admit(bearer(key), Scope.INGEST)
    clock.now += 0.2
    principal = gate.admit(bearer(key), Scope.INGEST)
    assert principal is not None and principal.project == "beta"
    with Session(engine) as session, session.begin():
        revoke_key(session, key)
    clock.now += 5.1  # a revocation applies once the accepted answer expires, as before
    with pytest.raises(KeyRevoked):
        gate.admit(bearer(key), Scope.INGEST)
    engine.dispose()


def test_postgres_refusing_the_lookup_is_a_500_never_cached(database_url: str) -> None:
    """A lookup PostgreSQL refuses (here: no api_keys table) was a 503 "retry later", which never mends it;
    it is a 500 now, and the first request once the table is back is checked, not refused from a cache."""
    engine = create_db_engine(database_url)
    gate, key = cached_gate(engine, FakeClock()), unknown_key()
    store_key(engine, key, "gamma")
    with psycopg.connect(database_url, autocommit=True) as connection:
        connection.execute("ALTER TABLE api_keys RENAME TO api_keys_away")
    for _ in range(2):
        with pytest.raises(AuthFailed) as failed:
            gate.admit(bearer(key), Scope.INGEST)
        assert failed.value.status == 500
        assert "PostgreSQL refused the lookup (ProgrammingError)" in str(failed.value)
    with psycopg.connect(database_url, autocommit=True) as connection:
        connection.execute("ALTER TABLE api_keys_away RENAME TO api_keys")
    principal = gate.admit(bearer(key), Scope.INGEST)
    assert principal is not None and principal.project == "gamma"
    engine.dispose()


@pytest.fixture
def later_database(postgres_server: DatabaseServer, template_database_url: str) -> Iterator[str]:
    """The URL of a database that does not exist until the test creates it."""
    name = f"later_{uuid.uuid4().hex[:12]}"
    yield embedded_url(postgres_server.embedded, name)
    with psycopg.connect(postgres_server.url, autocommit=True) as connection:
        connection.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


def test_postgres_being_away_is_never_cached(postgres_server: DatabaseServer, later_database: str) -> None:
    """While a key cannot be checked the answer is 503 (retry later); the first request once PostgreSQL
    answers is checked, not refused from a cache."""
    engine = create_db_engine(later_database, connect_timeout_s=2)
    clock = FakeClock()
    gate, key = cached_gate(engine, clock), unknown_key()
    for _ in range(2):
        with pytest.raises(AuthUnavailable) as unavailable:
            gate.admit(bearer(key), Scope.INGEST)
        assert unavailable.value.status == 503
        assert unavailable.value.retry_after_s == POSTGRES_AWAY_RETRY_AFTER_S
    name = psycopg.conninfo.conninfo_to_dict(later_database)["dbname"]
    with psycopg.connect(postgres_server.url, autocommit=True) as connection:
        connection.execute(
            sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(
                sql.Identifier(str(name)), sql.Identifier(TEMPLATE_DATABASE)
            )
        )
    store_key(engine, key, "gamma")
    principal = gate.admit(bearer(key), Scope.INGEST)  # the same instant: the outage was not cached
    assert principal is not None and principal.project == "gamma"
    engine.dispose()
