"""A learned second opinion on harmfulness: all-MiniLM-L6-v2 fine-tuned as a cross-encoder.

``evallens model pull`` trains it (``evals.calibrate.train``) on the harmfulness rows of the shipped
label files that are not held out, so it has read many wordings of compliance, leaks and unsafe advice
the rules have no cue for. It reads the expected behaviour, the question and the reference against the
answer and gives the probability that a reviewer would call the answer harmful. The harmfulness metric
lets it overturn the rules only when it is confident (``ScoringContext.harm_confidence``).

It is an ensemble: the same training run with several seeds (one sub-folder each, named in the
manifest), whose probabilities are averaged. On a training set this small one seed's model can land
several points of kappa above or below another's; the average depends much less on that luck.

What it cannot see: facts that are not in the text (whether a phone number is the company's own), and
wordings far from the nine companies it was trained on; it never sees the held-out rows.
"""

import json
from pathlib import Path
from typing import Any

from evals.errors import EvalConfigError

# Written by the trainer beside the members' folders, last: its presence marks a finished model.
MANIFEST = "evallens-harm-classifier.json"
MAX_TOKENS = 256


def pair(question: str, expected: str, reference: str) -> str:
    """The first text of the cross-encoder's pair (the answer is the second), as trained and as scored."""
    parts = [f"expected: {expected}", f"question: {question}"]
    if reference:
        parts.append(f"reference: {reference}")
    return " | ".join(parts)


def is_trained(path: Path) -> bool:
    """Whether ``path`` holds a finished classifier (the trainer writes the manifest last)."""
    return (path / MANIFEST).is_file()


def members(path: Path) -> list[Path]:
    """The folders of the ensemble's models at ``path``, as its manifest lists them.

    A manifest without a list is a single model's (as trained before ensembles), in ``path`` itself.
    """
    listed = json.loads((path / MANIFEST).read_text()).get("members", ["."])
    return [path / name for name in listed]


class HarmClassifier:
    """The fine-tuned ensemble at ``path``, loaded on first use (or by ``load``); answers are cached."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._models: list[Any] = []
        self._tokenizer: Any = None
        self._cache: dict[tuple[str, str], float] = {}

    def load(self) -> "HarmClassifier":
        """Load every member now: ``EvalConfigError`` naming the folder and the remedy when one cannot
        be (a member deleted, a weights file cut short), before a run spends its time on requests."""
        if self._models:
            return self
        from transformers import AutoModelForSequenceClassification, AutoTokenizer
        from transformers.utils import logging as transformers_logging

        transformers_logging.disable_progress_bar()
        try:
            folders = members(self.path)
            if not folders:
                raise ValueError("its manifest names no members")
            for folder in folders:
                if not folder.is_dir():
                    raise FileNotFoundError(f"{folder.name} is missing")
            tokenizer = AutoTokenizer.from_pretrained(folders[0])  # the base model's, in each
            models = [AutoModelForSequenceClassification.from_pretrained(f).eval() for f in folders]
        except Exception as error:  # a damaged folder raises from json, transformers or safetensors
            problem = f"{type(error).__name__}: {(str(error).splitlines() or [''])[0]}"
            raise EvalConfigError(
                f"the harm classifier at {self.path} cannot be loaded ({problem}); train it again with "
                "`evallens model pull --retrain`, or set EVALLENS_EVAL_HARM_CLASSIFIER=false"
            ) from error
        self._tokenizer, self._models = tokenizer, models
        return self

    def probability(self, question: str, expected: str, reference: str, answer: str) -> float:
        """The probability in [0, 1] that a reviewer would call ``answer`` harmful: the members' mean."""
        key = (pair(question, expected, reference), answer)
        if key not in self._cache:
            self._cache[key] = self._predict(*key)
        return self._cache[key]

    def _predict(self, first: str, answer: str) -> float:
        import torch

        self.load()
        inputs = self._tokenizer(first, answer, truncation=True, max_length=MAX_TOKENS, return_tensors="pt")
        with torch.no_grad():
            harmful = [torch.softmax(model(**inputs).logits, dim=-1)[0, 1] for model in self._models]
        return float(sum(harmful) / len(harmful))
