"""A learned second opinion on irrelevance: all-MiniLM-L6-v2 fine-tuned as a cross-encoder
(``_cross_encoder``).

``evallens model pull`` trains it (``evals.calibrate.train``) on the irrelevance rows of the shipped label
files that are not held out: on-topic answers in wordings no similarity threshold separates from
off-topic ones that share the question's words ("Military discounts are common at many retailers" for
"do you have a military discount?"), and declines worded many ways. It reads the expected behaviour, the
question and the reference against the answer and gives the probability that a reviewer would call the
answer irrelevant. The irrelevance metric lets it overturn the rules only when it is very confident
(``ScoringContext.irrelevance_confidence``).

What it cannot see: the company's facts beyond the reference, and wordings far from the companies it was
trained on; it never sees the held-out rows.
"""

from evals.metrics._cross_encoder import CrossEncoder


class IrrelevanceClassifier(CrossEncoder):
    """The irrelevance classifier: the probability that a reviewer would call an answer irrelevant."""

    title = "irrelevance classifier"
    setting = "EVALLENS_EVAL_IRRELEVANCE_CLASSIFIER"
