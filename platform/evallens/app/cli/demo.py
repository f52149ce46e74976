"""``evallens demo``: the whole loop on the embedded default."""

from typing import Annotated

import typer

from evallens.app.cli._output import output_console


def demo(
    smoke: Annotated[
        bool, typer.Option("--smoke", help="Tiny test model and a few cases per scenario (for CI).")
    ] = False,
    dashboard: Annotated[
        bool, typer.Option("--dashboard/--no-dashboard", help="Start the dashboard.")
    ] = True,
    keep_running: Annotated[
        bool, typer.Option("--keep-running/--exit", help="Keep everything running until Ctrl-C, or exit.")
    ] = True,
) -> None:
    """Run the full loop: model, PostgreSQL, collector, service, evals, a gated change, cases, dashboard.

    Settings come from EVALLENS_* variables (EVALLENS_DATA_DIR, EVALLENS_DEMO_CANDIDATE_CHANGE, ports
    of each component). Logs of every process are under DATA_DIR/demo/logs.
    """
    from evallens.app.demo.flow import DemoOptions, run_demo

    run_demo(DemoOptions(smoke=smoke, dashboard=dashboard, keep_running=keep_running), output_console())
