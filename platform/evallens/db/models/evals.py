"""Eval sets, their cases, runs, per-case results, baseline tags and gate reports."""

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    ForeignKey,
    ForeignKeyConstraint,
    Identity,
    Index,
    Integer,
    Text,
    UniqueConstraint,
    func,
    text,
)
from sqlalchemy.dialects.postgresql import DOUBLE_PRECISION, TIMESTAMP, UUID
from sqlalchemy.orm import Mapped, mapped_column

from evallens.db.base import Base
from evallens.db.models.traces import DEFAULT_PROJECT


class EvalSet(Base):
    """One version of a named eval set; a new version exists for every distinct content hash."""

    __tablename__ = "eval_sets"
    __table_args__ = (
        UniqueConstraint("project", "name", "version"),
        UniqueConstraint("project", "name", "content_hash"),
        # what a run points at: a set of its own project (the foreign key on eval_runs)
        UniqueConstraint("id", "project"),
    )

    id: Mapped[int] = mapped_column(Integer, Identity(), primary_key=True)
    project: Mapped[str] = mapped_column(Text, server_default=DEFAULT_PROJECT)
    name: Mapped[str] = mapped_column(Text)
    version: Mapped[int] = mapped_column(Integer)
    content_hash: Mapped[str] = mapped_column(Text)
    description: Mapped[str | None] = mapped_column(Text)
    source_path: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(TIMESTAMP(timezone=True), server_default=func.now())


class EvalCase(Base):
    """One case of one eval set version. Promoted production cases start as ``needs_review``."""

    __tablename__ = "eval_cases"
    __table_args__ = (
        UniqueConstraint("eval_set_id", "case_key"),
        # what a result points at: a case of its run's set (the foreign keys on eval_results)
        UniqueConstraint("id", "eval_set_id"),
    )

    id: Mapped[int] = mapped_column(Integer, Identity(), primary_key=True)
    eval_set_id: Mapped[int] = mapped_column(ForeignKey("eval_sets.id", ondelete="CASCADE"))
    case_key: Mapped[str] = mapped_column(Text, comment="the case id written in the set file")
    scenario: Mapped[str] = mapped_column(Text)
    question: Mapped[str | None] = mapped_column(Text)
    messages: Mapped[list[Any] | None] = mapped_column()
    reference_answer: Mapped[str | None] = mapped_column(Text)
    required_facts: Mapped[list[Any]] = mapped_column(server_default=text("'[]'::jsonb"))
    reference_context_ids: Mapped[list[Any]] = mapped_column(server_default=text("'[]'::jsonb"))
    expected_behavior: Mapped[str] = mapped_column(Text, comment="answer, decline or refuse")
    tags: Mapped[list[Any]] = mapped_column(server_default=text("'[]'::jsonb"))
    status: Mapped[str] = mapped_column(Text, server_default="active")
    source_trace_id: Mapped[str | None] = mapped_column(Text)
    redactions: Mapped[list[Any] | None] = mapped_column()


class EvalRun(Base):
    """One replay of one eval set version against one target configuration."""

    __tablename__ = "eval_runs"
    __table_args__ = (
        Index("ix_eval_runs_eval_set_id_started_at", "eval_set_id", "started_at"),
        Index("ix_eval_runs_config_fingerprint", "config_fingerprint"),
        # what a tag or a gate report points at: a run of its own project (the foreign keys below)
        UniqueConstraint("id", "project"),
        UniqueConstraint("id", "eval_set_id"),
        # a run replays a set of its own project
        ForeignKeyConstraint(["eval_set_id", "project"], ["eval_sets.id", "eval_sets.project"]),
    )

    id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), primary_key=True, default=uuid.uuid4)
    project: Mapped[str] = mapped_column(Text, server_default=DEFAULT_PROJECT)
    eval_set_id: Mapped[int] = mapped_column(Integer)
    label: Mapped[str | None] = mapped_column(Text)
    endpoint: Mapped[str] = mapped_column(Text)
    config: Mapped[dict[str, Any]] = mapped_column()
    config_fingerprint: Mapped[str] = mapped_column(Text)
    git_sha: Mapped[str | None] = mapped_column(Text)
    scoring: Mapped[dict[str, Any] | None] = mapped_column(
        comment="how the answers were scored: metrics code, thresholds, judge, classifier"
    )
    status: Mapped[str] = mapped_column(Text, comment="running, completed or failed")
    repeats: Mapped[int] = mapped_column(Integer, server_default="1")
    summary: Mapped[dict[str, Any] | None] = mapped_column()
    infra: Mapped[dict[str, Any] | None] = mapped_column(comment="serving metrics of the run window")
    error: Mapped[str | None] = mapped_column(Text)
    started_at: Mapped[datetime] = mapped_column(TIMESTAMP(timezone=True), server_default=func.now())
    finished_at: Mapped[datetime | None] = mapped_column(TIMESTAMP(timezone=True))


class EvalResult(Base):
    """The outcome of one case (one repeat) in one run."""

    __tablename__ = "eval_results"
    __table_args__ = (
        UniqueConstraint("run_id", "case_id", "repeat"),
        # a result is of a case of its run's set: both foreign keys carry the set
        ForeignKeyConstraint(
            ["run_id", "eval_set_id"], ["eval_runs.id", "eval_runs.eval_set_id"], ondelete="CASCADE"
        ),
        ForeignKeyConstraint(["case_id", "eval_set_id"], ["eval_cases.id", "eval_cases.eval_set_id"]),
    )

    id: Mapped[int] = mapped_column(BigInteger, Identity(), primary_key=True)
    run_id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True))
    eval_set_id: Mapped[int] = mapped_column(Integer, comment="the run's set, which the case is of")
    case_id: Mapped[int] = mapped_column(Integer)
    repeat: Mapped[int] = mapped_column(Integer, server_default="0")
    response: Mapped[str | None] = mapped_column(Text)
    retrieved_ids: Mapped[list[Any]] = mapped_column(server_default=text("'[]'::jsonb"))
    scores: Mapped[dict[str, Any]] = mapped_column(server_default=text("'{}'::jsonb"))
    passed: Mapped[dict[str, Any]] = mapped_column(server_default=text("'{}'::jsonb"))
    unscored: Mapped[dict[str, Any]] = mapped_column(
        server_default=text("'{}'::jsonb"),
        comment="metric -> why the judge gave no verdict; such metrics are absent from scores",
    )
    latency_ms: Mapped[float | None] = mapped_column(DOUBLE_PRECISION)
    ttft_ms: Mapped[float | None] = mapped_column(DOUBLE_PRECISION)
    input_tokens: Mapped[int | None] = mapped_column(Integer)
    output_tokens: Mapped[int | None] = mapped_column(Integer)
    exact_cache_hit: Mapped[bool | None] = mapped_column(Boolean)
    semantic_cache_hit: Mapped[bool | None] = mapped_column(Boolean)
    degraded: Mapped[bool | None] = mapped_column(Boolean)
    error: Mapped[str | None] = mapped_column(Text)
    trace_id: Mapped[str | None] = mapped_column(Text)


class EvalTag(Base):
    """A name (``main``, ``release-1.2``) pointing at a run, used as a gate baseline."""

    __tablename__ = "eval_tags"
    # a tag names a run of its own project: one of another project's would list in this one's runs
    __table_args__ = (
        ForeignKeyConstraint(
            ["run_id", "project"], ["eval_runs.id", "eval_runs.project"], ondelete="CASCADE"
        ),
    )

    project: Mapped[str] = mapped_column(Text, primary_key=True, server_default=DEFAULT_PROJECT)
    eval_set_name: Mapped[str] = mapped_column(Text, primary_key=True)
    tag: Mapped[str] = mapped_column(Text, primary_key=True)
    run_id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True))
    created_at: Mapped[datetime] = mapped_column(TIMESTAMP(timezone=True), server_default=func.now())


class GateReport(Base):
    """The verdict of one gate: a baseline run against a candidate run, with the full report."""

    __tablename__ = "gate_reports"
    __table_args__ = (
        Index("ix_gate_reports_created_at", "created_at"),
        # a gate compares two runs of its own project
        ForeignKeyConstraint(
            ["baseline_run_id", "project"], ["eval_runs.id", "eval_runs.project"], ondelete="CASCADE"
        ),
        ForeignKeyConstraint(
            ["candidate_run_id", "project"], ["eval_runs.id", "eval_runs.project"], ondelete="CASCADE"
        ),
    )

    id: Mapped[int] = mapped_column(Integer, Identity(), primary_key=True)
    project: Mapped[str] = mapped_column(Text, server_default=DEFAULT_PROJECT)
    eval_set_name: Mapped[str] = mapped_column(Text)
    baseline_run_id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True))
    candidate_run_id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True))
    verdict: Mapped[str] = mapped_column(Text, comment="pass or regression")
    report: Mapped[dict[str, Any]] = mapped_column()
    created_at: Mapped[datetime] = mapped_column(TIMESTAMP(timezone=True), server_default=func.now())


class JudgeVerdict(Base):
    """A cached LLM-judge verdict, keyed by everything that decides it, so replays never pay twice; a
    project's replays read only the verdicts cached for it."""

    __tablename__ = "judge_verdicts"

    key: Mapped[str] = mapped_column(
        Text,
        primary_key=True,
        comment="sha256 of project, judge model, prompt version, question, reference, answer",
    )
    project: Mapped[str] = mapped_column(Text, comment="whose questions and answers were judged")
    judge_model: Mapped[str] = mapped_column(Text)
    prompt_version: Mapped[str] = mapped_column(Text)
    question: Mapped[str] = mapped_column(Text)
    reference: Mapped[str] = mapped_column(
        Text, comment="reference answer, required facts and expected behaviour"
    )
    answer: Mapped[str] = mapped_column(Text)
    verdict: Mapped[bool] = mapped_column(Boolean, comment="the metric's positive class")
    reason: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(TIMESTAMP(timezone=True), server_default=func.now())
