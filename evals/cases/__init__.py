"""Bad production cases: mine and deduplicate them, and export sets back to files."""

from evals.cases.export import ExportReport, export_set
from evals.cases.mine import Candidate, MiningReport, mine_cases, parse_since

__all__ = ["Candidate", "ExportReport", "MiningReport", "export_set", "mine_cases", "parse_since"]
