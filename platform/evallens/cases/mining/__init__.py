"""Bad-case mining: rank production traces that look bad, drop known questions, merge near-duplicates.

The one implementation behind ``evallens cases mine``, the demo and the dashboard's Cases page; the
signals, points and rules are documented once, in ``docs/feedback.md``. Reading what an answer says
(refusals, declines) and embedding questions are lent by the caller as ``Readers``, so every caller
uses the same readers and the core imports no model.
"""

from evallens.cases.mining.ahead import embed_ahead, projects_with_traffic
from evallens.cases.mining.dedupe import Cluster, Embed
from evallens.cases.mining.mine import Candidate, MiningReport, Readers, known_cases, mine_cases
from evallens.cases.mining.signals import REASONS, WEIGHTS, BadTrace, judge, says_no

__all__ = [
    "REASONS",
    "WEIGHTS",
    "BadTrace",
    "Candidate",
    "Cluster",
    "Embed",
    "MiningReport",
    "Readers",
    "embed_ahead",
    "judge",
    "known_cases",
    "mine_cases",
    "projects_with_traffic",
    "says_no",
]
