"""Test harness: one embedded PostgreSQL per test session, a migrated template, a clone per test."""

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from psycopg import sql
from sqlalchemy.orm import Session, sessionmaker

from evallens.db import create_db_engine, create_session_factory
from evallens.db.migrate import upgrade
from evallens.db.server import DatabaseServer, embedded_url, ensure_database, start_embedded
from evallens.ports import share_ports

TEMPLATE_DATABASE = "evallens_template"
DATABASE_FIXTURES = {"database_url", "empty_database_url", "postgres_server", "template_database_url"}

# Torch and vLLM on two shared cores: more threads are slower, sometimes 30x.
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("RAGAS_DO_NOT_TRACK", "true")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
# The metrics under test are the rules: a classifier `evallens model pull` trained on this
# machine must not change their verdicts (tests that want one name it).
os.environ.setdefault("EVALLENS_EVAL_HARM_CLASSIFIER", "false")
os.environ.setdefault("EVALLENS_EVAL_ACCURACY_CLASSIFIER", "false")
os.environ.setdefault("EVALLENS_EVAL_IRRELEVANCE_CLASSIFIER", "false")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark every test by what it needs: ``integration`` when it touches PostgreSQL, else ``unit``.

    Under pytest-xdist (``make test``: two workers, ``--dist loadfile``, no reordering), the modules
    with ``slow`` tests (minutes each) are handed out first, so that no worker is left with one at
    the end while the other idles; each module keeps its own order.
    """
    if hasattr(config, "workerinput"):
        slow_modules = {item.path for item in items if item.get_closest_marker("slow") is not None}
        items.sort(key=lambda item: item.path not in slow_modules)
    for item in items:
        own = {mark.name for mark in item.iter_markers()}
        if own & {"integration", "slow", "gpu"}:
            continue
        fixtures = set(getattr(item, "fixturenames", ()))
        item.add_marker(pytest.mark.integration if fixtures & DATABASE_FIXTURES else pytest.mark.unit)


@pytest.fixture(scope="session")
def postgres_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DatabaseServer]:
    """An embedded PostgreSQL 18 + pgvector for the whole test session."""
    pgdata = tmp_path_factory.mktemp("postgres") / "data"
    server = start_embedded(pgdata)
    yield DatabaseServer(url=embedded_url(server, "postgres"), embedded=server)
    server.cleanup()


@pytest.fixture(scope="session")
def template_database_url(postgres_server: DatabaseServer) -> str:
    """A database migrated to head once, cloned by ``database_url`` for each test."""
    ensure_database(postgres_server.url, TEMPLATE_DATABASE)
    url = embedded_url(postgres_server.embedded, TEMPLATE_DATABASE)
    upgrade(url)
    return url


@pytest.fixture
def database_url(postgres_server: DatabaseServer, template_database_url: str) -> Iterator[str]:
    """A fresh database at the head revision, private to one test."""
    name = f"test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(postgres_server.url, autocommit=True) as connection:
        connection.execute(
            sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(
                sql.Identifier(name), sql.Identifier(TEMPLATE_DATABASE)
            )
        )
    yield embedded_url(postgres_server.embedded, name)
    with psycopg.connect(postgres_server.url, autocommit=True) as connection:
        connection.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(name)))


@pytest.fixture
def empty_database_url(postgres_server: DatabaseServer) -> Iterator[str]:
    """A fresh database with no schema at all, for migration tests."""
    name = f"empty_{uuid.uuid4().hex[:12]}"
    ensure_database(postgres_server.url, name)
    yield embedded_url(postgres_server.embedded, name)
    with psycopg.connect(postgres_server.url, autocommit=True) as connection:
        connection.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(name)))


REPO_ROOT = Path(__file__).resolve().parents[1]


def pytest_configure(config: pytest.Config) -> None:
    """Each pytest-xdist worker draws free ports from its own part of the window."""
    worker = getattr(config, "workerinput", None)
    if worker is not None:
        share_ports(int(worker["workerid"].removeprefix("gw")), int(worker["workercount"]))


@pytest.fixture
def sessions(database_url: str) -> Iterator[sessionmaker[Session]]:
    """Sessions on this test's database."""
    engine = create_db_engine(database_url)
    yield create_session_factory(engine)
    engine.dispose()
