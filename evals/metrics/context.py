"""Build the scoring context from settings: the local embedding model, thresholds and the judge; and
describe how a context scores, so that runs scored differently are never compared or reused."""

import dataclasses
import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Literal

from sqlalchemy.orm import Session, sessionmaker

from evallens.credentials import masked_url
from evallens.db.models.traces import DEFAULT_PROJECT
from evallens.settings import EvalSettings, ServiceSettings
from evals.errors import EndpointUnreachable, EvalConfigError
from evals.metrics._accuracy_classifier import AccuracyClassifier
from evals.metrics._cross_encoder import MANIFEST, CrossEncoder, is_trained
from evals.metrics._embedding import MiniLmSimilarity
from evals.metrics._harm_classifier import HarmClassifier
from evals.metrics._irrelevance_classifier import IrrelevanceClassifier
from evals.metrics.judge.client import JudgeClient, JudgeUnavailable
from evals.metrics.result import JudgeMode, ScoringContext, Similarity


def judge_mode(settings: EvalSettings) -> JudgeMode:
    """The configured mode; unset: ``both`` with a judge endpoint, else ``rules``."""
    mode = settings.eval_judge_mode or ("both" if settings.eval_judge_endpoint else "rules")
    if mode != "rules" and not settings.eval_judge_endpoint:
        raise EvalConfigError(f"EVALLENS_EVAL_JUDGE_MODE={mode} needs EVALLENS_EVAL_JUDGE_ENDPOINT")
    return mode


# the metrics that have a learned classifier
LearnedMetric = Literal["harmfulness", "accuracy", "irrelevance"]


@dataclass(frozen=True)
class Learned:
    """One metric's learned classifier: its model and the settings that switch it on, place it and size
    its ensemble (``evallens model pull`` trains it, ``build_scoring_context`` loads it)."""

    kind: type[CrossEncoder]
    key: str  # its ``ScoringContext`` field, and its key in ``describe_scoring`` and calibrate's JSON
    folder: str  # its folder under the models folder, unless its path setting names another
    enabled: Callable[[EvalSettings], bool]
    configured_path: Callable[[EvalSettings], Path | None]
    members: Callable[[EvalSettings], int]

    def path(self, settings: EvalSettings) -> Path:
        """Where the classifier is, and where ``evallens model pull`` trains it."""
        return self.configured_path(settings) or ServiceSettings().models_dir / self.folder

    def load(self, settings: EvalSettings) -> CrossEncoder | None:
        """The classifier, loaded, when enabled and trained; a damaged one raises ``EvalConfigError``."""
        path = self.path(settings)
        return self.kind(path).load() if self.enabled(settings) and is_trained(path) else None


LEARNED: dict[LearnedMetric, Learned] = {
    "harmfulness": Learned(
        HarmClassifier,
        "harm_classifier",
        "harm-classifier",
        enabled=lambda settings: settings.eval_harm_classifier,
        configured_path=lambda settings: settings.eval_harm_classifier_path,
        members=lambda settings: settings.eval_harm_classifier_members,
    ),
    "accuracy": Learned(
        AccuracyClassifier,
        "accuracy_classifier",
        "accuracy-classifier",
        enabled=lambda settings: settings.eval_accuracy_classifier,
        configured_path=lambda settings: settings.eval_accuracy_classifier_path,
        members=lambda settings: settings.eval_accuracy_classifier_members,
    ),
    "irrelevance": Learned(
        IrrelevanceClassifier,
        "irrelevance_classifier",
        "irrelevance-classifier",
        enabled=lambda settings: settings.eval_irrelevance_classifier,
        configured_path=lambda settings: settings.eval_irrelevance_classifier_path,
        members=lambda settings: settings.eval_irrelevance_classifier_members,
    ),
}


def build_scoring_context(
    settings: EvalSettings,
    similarity: Similarity | None = None,
    sessions: sessionmaker[Session] | None = None,
    *,
    project: str = DEFAULT_PROJECT,
) -> ScoringContext:
    """A ``ScoringContext`` with all-MiniLM-L6-v2, the thresholds and the judge the settings name.

    The harm, accuracy and irrelevance classifiers join it when enabled and trained (``evallens model
    pull``).

    With ``sessions``, judge verdicts are cached in PostgreSQL, for ``project`` alone.
    """
    mode = judge_mode(settings)
    judge = None
    if mode != "rules" and settings.eval_judge_endpoint:
        from evals.metrics.judge import JudgeClient, LlmJudge

        client = JudgeClient(
            settings.eval_judge_endpoint,
            model=settings.eval_judge_model,
            api_key=settings.eval_judge_api_key,
            timeout_s=settings.eval_judge_timeout_s,
            max_tokens=settings.eval_judge_max_tokens,
        )
        judge = LlmJudge(
            client, concurrency=settings.eval_judge_concurrency, sessions=sessions, project=project
        )
    # a damaged classifier fails here, not mid-run
    harm_classifier = LEARNED["harmfulness"].load(settings)
    accuracy_classifier = LEARNED["accuracy"].load(settings)
    irrelevance_classifier = LEARNED["irrelevance"].load(settings)
    return ScoringContext(
        similarity=similarity or MiniLmSimilarity(),
        similarity_threshold=settings.eval_similarity_threshold,
        relevance_threshold=settings.eval_relevance_threshold,
        relevance_floor=settings.eval_relevance_floor,
        engagement_threshold=settings.eval_engagement_threshold,
        compliance_threshold=settings.eval_compliance_threshold,
        recall_k=settings.eval_recall_k,
        judge=judge,
        judge_mode=mode,
        harm_classifier=harm_classifier,
        harm_confidence=settings.eval_harm_confidence,
        accuracy_classifier=accuracy_classifier,
        accuracy_confidence=settings.eval_accuracy_confidence,
        irrelevance_classifier=irrelevance_classifier,
        irrelevance_confidence=settings.eval_irrelevance_confidence,
    )


def describe_scoring(context: ScoringContext) -> dict[str, object]:
    """What decides a run's scores besides the answers: the metrics' code, their settings (thresholds,
    judge mode), the judge and the classifiers. Stored with each run; two runs compare only when
    theirs are equal.

    A changed rule, threshold, judge or retrained classifier can move the scores of unchanged answers,
    and a gate would read that move as the target's.
    """
    parameters = {  # thresholds, the judge's mode and margin, the classifier's confidence
        field.name: getattr(context, field.name)
        for field in dataclasses.fields(context)
        if isinstance(getattr(context, field.name), int | float | str)
    }
    judge = getattr(context.judge, "client", None)
    return {
        "metrics_code": metrics_code_digest(),
        "similarity": getattr(context.similarity, "name", type(context.similarity).__name__),
        "settings": parameters,
        # stored with the run and shown: the judge's URL without its credentials
        "judge": (
            None if judge is None else {"endpoint": masked_url(judge.base_url), "model": _judge_model(judge)}
        ),
        "harm_classifier": _classifier(context.harm_classifier),
        "accuracy_classifier": _classifier(context.accuracy_classifier),
        "irrelevance_classifier": _classifier(context.irrelevance_classifier),
    }


def _classifier(classifier: object) -> str | None:
    """A classifier's manifest digest (retrained on other rows, seeds or settings: another digest)."""
    if isinstance(classifier, CrossEncoder):
        return "manifest " + hashlib.sha256((classifier.path / MANIFEST).read_bytes()).hexdigest()[:16]
    return None if classifier is None else type(classifier).__name__


def _judge_model(client: JudgeClient) -> str | None:
    """The model the judge asks: the configured one, else the one its endpoint serves now (the same
    address serving another model scores otherwise); None when the endpoint cannot say."""
    try:
        with client.open() as http:
            return client.model_name(http)
    except JudgeUnavailable:
        return None


def require_judge_model(context: ScoringContext) -> None:
    """``EndpointUnreachable`` when the context's judge cannot say which model it serves (down, or still
    starting): a description made now records no model, which differs from a run's for that reason."""
    client = getattr(context.judge, "client", None)
    if not isinstance(client, JudgeClient):
        return
    try:
        with client.open() as http:
            client.model_name(http)
    except JudgeUnavailable as error:
        raise EndpointUnreachable(
            f"{error}; the judge must say which model it serves (start it, or set EVALLENS_EVAL_JUDGE_MODEL)"
        ) from None


@cache
def metrics_code_digest() -> str:
    """SHA-256 (16 hex digits) of the metrics' source: rules, judge prompts, the classifier's input."""
    digest = hashlib.sha256()
    root = Path(__file__).parent
    for path in sorted(root.rglob("*.py")):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]
