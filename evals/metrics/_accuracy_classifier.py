"""A learned second opinion on accuracy: all-MiniLM-L6-v2 fine-tuned as a cross-encoder
(``_cross_encoder``).

``evallens model pull`` trains it (``evals.calibrate.train``) on the accuracy rows of the shipped label
files that are not held out: thousands of right and wrong answers to policy questions, many of them wrong
only by a claim the reference does not make ("and shipping is always free", "you can take a further 10%
off"), which no rule sees. It reads the expected behaviour, the question and the reference against the
answer and gives the probability that a reviewer would call the answer accurate. The accuracy metric lets
it overturn the rules only when it is very confident (``ScoringContext.accuracy_confidence``).

What it cannot see: the company's facts beyond the reference (an added claim may be true), and wordings
far from the companies it was trained on; it never sees the held-out rows.
"""

from evals.metrics._cross_encoder import CrossEncoder


class AccuracyClassifier(CrossEncoder):
    """The accuracy classifier: the probability that a reviewer would call an answer accurate."""

    title = "accuracy classifier"
    setting = "EVALLENS_EVAL_ACCURACY_CLASSIFIER"
