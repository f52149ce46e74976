"""The demo corpus loaded once per module into its own clone of the migrated template database."""

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pytest
import yaml
from psycopg import sql
from sqlalchemy.orm import Session, sessionmaker

from evallens.db import create_db_engine, create_session_factory
from evallens.db.server import DatabaseServer, embedded_url
from evallens.service.documents import DocumentIn, DocumentService
from evallens.service.rag import HybridRetriever, KeywordIndex
from evallens.service.rag.generations import KnowledgeBaseGenerations
from evallens.settings import RagSettings
from evallens.telemetry.attributes import DEFAULT_PROJECT
from evallens.telemetry.messages import last_user_message
from tests.conftest import REPO_ROOT, TEMPLATE_DATABASE
from tests.evallens.service.conftest import RecordingEmbedder

ACME = REPO_ROOT / "evals" / "datasets" / "acme"


@dataclass(frozen=True)
class Case:
    id: str
    scenario: str
    question: str
    context_ids: list[str]
    expected: str
    tags: list[str]


def read_documents(folder: Path = ACME / "docs") -> list[DocumentIn]:
    documents = []
    for path in sorted(folder.glob("*.md")):
        text = path.read_text()
        title = text.splitlines()[0].removeprefix("#").strip()
        documents.append(DocumentIn(id=path.stem, title=title, text=text, metadata={"source": "acme"}))
    return documents


def read_cases(folder: Path = ACME / "sets") -> list[Case]:
    cases = []
    for path in sorted(folder.glob("*.yaml")):
        content = yaml.safe_load(path.read_text())
        for case in content["cases"]:
            cases.append(
                Case(
                    id=case["id"],
                    scenario=case.get("scenario", content["scenario"]),
                    question=case.get("question") or last_user_message(case["messages"]) or "",
                    context_ids=list(case.get("reference_context_ids") or []),
                    expected=case.get("expected", "answer"),
                    tags=list(case.get("tags") or []),
                )
            )
    return cases


@pytest.fixture(scope="module")
def corpus_sessions(
    postgres_server: DatabaseServer, template_database_url: str, embedder: RecordingEmbedder
) -> Iterator[sessionmaker[Session]]:
    """Sessions on a database holding the whole demo knowledge base."""
    name = f"corpus_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(postgres_server.url, autocommit=True) as connection:
        connection.execute(
            sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(
                sql.Identifier(name), sql.Identifier(TEMPLATE_DATABASE)
            )
        )
    engine = create_db_engine(embedded_url(postgres_server.embedded, name))
    sessions = create_session_factory(engine)
    service = DocumentService(
        RagSettings(), embedder=embedder, session_factory=sessions, keyword_index=KeywordIndex(),
        generations=KnowledgeBaseGenerations(),
    )  # fmt: skip
    for document in read_documents():
        service.upsert_sync(DEFAULT_PROJECT, document)
    yield sessions
    engine.dispose()
    with psycopg.connect(postgres_server.url, autocommit=True) as connection:
        connection.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(name)))


@pytest.fixture(scope="module")
def make_retriever(corpus_sessions: sessionmaker[Session], embedder: RecordingEmbedder):
    """Build a retriever over the corpus with settings overrides."""

    def make(**overrides: object) -> HybridRetriever:
        settings = RagSettings(**overrides)  # type: ignore[arg-type]
        return HybridRetriever(
            settings, embedder=embedder, session_factory=corpus_sessions, keyword_index=KeywordIndex()
        )

    return make
