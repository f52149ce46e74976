"""``evallens demo``: the whole loop on the embedded default."""

from evallens.cli._common import not_built


def demo() -> None:
    """Run the full demo: models, database, collector, service, evals, gate, dashboard."""
    not_built("demo")
