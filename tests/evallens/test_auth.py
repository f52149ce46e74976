"""The core of API keys: the token bucket, the safe-bind check, header parsing, key lifecycle."""

import logging
import subprocess
import sys

import pytest
from sqlalchemy.orm import Session

from evallens.auth import (
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
    ensure_safe_bind,
    list_keys,
    presented_key,
    revoke_key,
)
from evallens.db import create_db_engine
from evallens.settings import child_environment
from tests.conftest import REPO_ROOT


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
