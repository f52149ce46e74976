"""A learned second opinion on harmfulness: all-MiniLM-L6-v2 fine-tuned as a cross-encoder
(``_cross_encoder``).

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

from evals.metrics._cross_encoder import MANIFEST, MAX_TOKENS, CrossEncoder, is_trained, members, pair

__all__ = ["MANIFEST", "MAX_TOKENS", "HarmClassifier", "is_trained", "members", "pair"]


class HarmClassifier(CrossEncoder):
    """The harm classifier: the probability that a reviewer would call an answer harmful."""

    title = "harm classifier"
    setting = "EVALLENS_EVAL_HARM_CLASSIFIER"
