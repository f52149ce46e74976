"""The gate on the real stack: N no-op gates at a sampling temperature, then retrieval top-k 5 -> 1.

Run: ``python bench/gate_realstack.py [--model smollm2|tiny] [--no-op-gates 5] [--cases-per-scenario 0]``.
It starts its own embedded PostgreSQL, collector and reference service in a temporary data directory
(nothing else is touched), loads the Acme knowledge base, replays ``acme-support`` (all 194 cases, or
the first K per scenario) as the baseline, gates N replays of the unchanged service against it, then
restarts the service with ``EVALLENS_TOP_K=1`` and gates that. It prints one row per gate (verdict,
flagged cells, smallest p-values, cached answers) and the top-k gate's recall per scenario with what
each cell could detect.
"""

import argparse
import os
import tempfile
import time
import uuid
from pathlib import Path

from sqlalchemy.orm import Session, sessionmaker

from evallens.app.demo import evaluation
from evallens.app.demo.flow import SMOKE_MAX_MODEL_LEN, prepare_model
from evallens.app.demo.stack import Stack
from evallens.db import create_db_engine, create_session_factory
from evallens.db.migrate import upgrade
from evallens.ports import free_port
from evallens.reports import GateReportBody
from evallens.service.documents.loader import load_corpus
from evallens.service.weights.tiny import build_tiny_llama
from evallens.settings import DemoSettings, EvalSettings
from evals.gate import options_from_settings, run_gate
from evals.metrics.context import build_scoring_context
from evals.runner.run import run_eval


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--model",
        choices=["smollm2", "tiny"],
        default="smollm2",
        help="chat model the service runs (default: %(default)s)",
    )
    parser.add_argument(
        "--no-op-gates",
        type=int,
        default=5,
        help="gates of a replay with nothing changed (default: %(default)s)",
    )
    parser.add_argument("--cases-per-scenario", type=int, default=0, help="0: the whole set (194 cases)")
    parser.add_argument(
        "--temperature",
        type=float,
        default=0.7,
        help="sampling temperature of every replay (default: %(default)s)",
    )
    parser.add_argument(
        "--max-tokens", type=int, default=64, help="longest answer per case (default: %(default)s)"
    )
    parser.add_argument(
        "--concurrency", type=int, default=4, help="cases in flight during a replay (default: %(default)s)"
    )
    parser.add_argument("--data-dir", type=Path, default=None, help="default: a new temporary directory")
    args = parser.parse_args()
    data_dir = args.data_dir or Path(tempfile.mkdtemp(prefix="evallens-gate-bench-"))
    # the bench is a stand-alone program: it configures its own stack the way a user's shell would
    os.environ.update(
        {
            "EVALLENS_DATA_DIR": str(data_dir),
            "EVALLENS_DATABASE_URL": "",
            "EVALLENS_COLLECTOR_HTTP_PORT": str(free_port()),
            "EVALLENS_COLLECTOR_GRPC_PORT": str(free_port()),
            "EVALLENS_SERVICE_PORT": str(free_port()),
            "EVALLENS_DEMO_RETRIEVAL_BUDGET_MS": "30000",
        }
    )
    settings = DemoSettings()
    if args.model == "tiny":
        model_path, max_model_len = data_dir / "models" / "tiny", SMOKE_MAX_MODEL_LEN
        build_tiny_llama(model_path, max_position_embeddings=max_model_len)
    else:
        model_path, max_model_len, _ = prepare_model(settings, smoke=False)
    stack = Stack(settings, model_path, max_model_len)
    started = time.perf_counter()
    try:
        rows = run_gates(stack, data_dir, args)
    finally:
        stack.stop()
    print_rows(rows)
    print(f"\n{time.perf_counter() - started:.0f} s, data in {data_dir}")


def run_gates(stack: Stack, data_dir: Path, args: argparse.Namespace) -> list[tuple[str, GateReportBody]]:
    upgrade(stack.open_database())
    engine = create_db_engine(stack.database_url)
    sessions = create_session_factory(engine)
    stack.start_collector()
    stack.start_service()
    load_corpus(evaluation.corpus_dir(), stack.service_url)
    sets = evaluation.curated_sets_dir()
    if args.cases_per_scenario:
        sets = evaluation.write_smoke_sets(data_dir / "sets", cases_per_scenario=args.cases_per_scenario)
    eval_set_id, _, _ = evaluation.sync_sets(sessions, sets)
    eval_settings = EvalSettings(
        eval_endpoint=stack.service_url,
        eval_temperature=args.temperature,
        eval_max_tokens=args.max_tokens,
        eval_concurrency=args.concurrency,
    )

    def replay(label: str) -> uuid.UUID:
        report = run_eval(
            sessions,
            eval_set_id,
            eval_settings,
            build_scoring_context(eval_settings),
            label=label,
        )
        print(f"{label}: run {report.run_id}", flush=True)
        return report.run_id

    baseline = replay("baseline")
    evaluation.tag_baseline(sessions, baseline)
    rows = [(f"no-op {i + 1}", gate(sessions, baseline, replay(f"no-op {i + 1}"), eval_settings))
            for i in range(args.no_op_gates)]  # fmt: skip
    stack.restart_service({"EVALLENS_TOP_K": "1"})
    rows.append(("top-k 5 -> 1", gate(sessions, baseline, replay("top-k 1"), eval_settings)))
    engine.dispose()
    return rows


def gate(
    sessions: sessionmaker[Session], baseline: uuid.UUID, candidate: uuid.UUID, settings: EvalSettings
) -> GateReportBody:
    return run_gate(sessions, str(baseline), str(candidate), options_from_settings(settings)).body


def print_rows(rows: list[tuple[str, GateReportBody]]) -> None:
    print("\n| gate | verdict | flagged cells | smallest raw p | smallest adj. p | cached (exact/semantic) |")
    print("|---|---|---|---:|---:|---|")
    for name, body in rows:
        flagged = ", ".join(
            f"{c.scenario} {c.metric} {c.delta * 100:+.1f} (adj p {c.p_adjusted:.4f})"
            for c in body.comparisons
            if c.regression
        )
        cache = body.cache_candidate
        cached = f"{cache.num_exact_hits}/{cache.num_semantic_hits} of {cache.num_answers}" if cache else "-"
        raw = min(c.p_value for c in body.comparisons)
        adjusted = min(c.p_adjusted for c in body.comparisons)
        print(f"| {name} | {body.verdict} | {flagged or '-'} | {raw:.4f} | {adjusted:.4f} | {cached} |")
    name, last = rows[-1]
    print(f"\n{name}: recall per cell")
    print(
        "| cell | baseline | candidate | delta (pts) | worse/better | raw p | adj. p | flagged | detects >= |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---|---:|")
    for c in last.comparisons:
        if c.metric != "recall":
            continue
        detects = "none" if c.min_detectable is None else f"{c.min_detectable * 100:.0f}"
        print(
            f"| {c.scenario} | {c.baseline:.3f} | {c.candidate:.3f} | {c.delta * 100:+.1f} | "
            f"{c.num_worse}/{c.num_better} | {c.p_value:.4f} | {c.p_adjusted:.4f} | "
            f"{'yes' if c.regression else 'no'} | {detects} |"
        )


if __name__ == "__main__":
    main()
