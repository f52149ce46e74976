"""Every evallens table, split by area. Importing this module registers them all on ``Base.metadata``."""

from evallens.db.models.auth import ApiKey, Project
from evallens.db.models.content import GenAIContent
from evallens.db.models.embeddings import QuestionEmbedding
from evallens.db.models.evals import (
    EvalCase,
    EvalResult,
    EvalRun,
    EvalSet,
    EvalTag,
    GateReport,
    JudgeVerdict,
)
from evallens.db.models.knowledge import Chunk, Document
from evallens.db.models.metrics import MetricRollup, MetricSample
from evallens.db.models.prices import ModelPrice
from evallens.db.models.quarantine import QuarantinedSpan
from evallens.db.models.summaries import ProductionHistogram, SpanDimension, SpanRollup, TraceSummary
from evallens.db.models.traces import Span, SpanRetention

__all__ = [
    "ApiKey",
    "Chunk",
    "Document",
    "EvalCase",
    "EvalResult",
    "EvalRun",
    "EvalSet",
    "EvalTag",
    "GateReport",
    "GenAIContent",
    "JudgeVerdict",
    "MetricRollup",
    "MetricSample",
    "ModelPrice",
    "ProductionHistogram",
    "Project",
    "QuarantinedSpan",
    "QuestionEmbedding",
    "Span",
    "SpanDimension",
    "SpanRetention",
    "SpanRollup",
    "TraceSummary",
]
