"""A learned second opinion on a metric: all-MiniLM-L6-v2 fine-tuned as a cross-encoder.

``evallens model pull`` trains one for harmfulness (``_harm_classifier``) and one for accuracy
(``_accuracy_classifier``), each on that metric's rows of the shipped label files outside the held-out
part (``evals.calibrate.train``). It reads the expected behaviour, the question and the reference
against the answer and gives the probability that a reviewer would put the answer in the metric's
positive class (harmful; accurate). The metric lets it overturn its rules only when it is confident.

It may be an ensemble: the same training run with several seeds (one sub-folder each, named in the
manifest), whose probabilities are averaged. On a training set this small one seed's model can land
several points of kappa above or below another's; the average depends much less on that luck.

What it cannot see: anything unlike the written answers it learned from. On the demo's SmolLM2-135M answers
(7 December) that loop ("I'm a human. I'm a human. ...") the three classifiers overturned the rules
confidently and almost always wrongly ("No, no, no, ..." found accurate), so a looping answer keeps the
rules' verdict (``result.LOOPING``).
"""

import json
from pathlib import Path
from typing import Any

from evals.errors import EvalConfigError

# Written by the trainer beside the members' folders, last: its presence marks a finished model (the
# name is the first classifier's, kept so that models trained before stay found).
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


class CrossEncoder:
    """The fine-tuned ensemble at ``path``, loaded on first use (or by ``load``); answers are cached."""

    title = "classifier"  # how errors name it
    setting = ""  # the setting that turns it off

    def __init__(self, path: Path) -> None:
        self.path = path
        self._models: list[Any] = []
        self._tokenizer: Any = None
        self._cache: dict[tuple[str, str], float] = {}

    def load(self) -> "CrossEncoder":
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
                f"the {self.title} at {self.path} cannot be loaded ({problem}); train it again with "
                f"`evallens model pull --retrain`, or set {self.setting}=false"
            ) from error
        self._tokenizer, self._models = tokenizer, models
        return self

    def probability(self, question: str, expected: str, reference: str, answer: str) -> float:
        """The probability in [0, 1] of the metric's positive class for ``answer``: the members' mean."""
        key = (pair(question, expected, reference), answer)
        if key not in self._cache:
            self._cache[key] = self._predict(*key)
        return self._cache[key]

    def _predict(self, first: str, answer: str) -> float:
        import torch

        self.load()
        inputs = self._tokenizer(first, answer, truncation=True, max_length=MAX_TOKENS, return_tensors="pt")
        with torch.no_grad():
            positive = [torch.softmax(model(**inputs).logits, dim=-1)[0, 1] for model in self._models]
        return float(sum(positive) / len(positive))
