"""The demo, step by step: models, database, components, knowledge base, evals, gate, cases, dashboard."""

import signal
import threading
import time
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

from rich.console import Console
from sqlalchemy import Engine, text
from sqlalchemy.orm import Session, sessionmaker

from evallens.app.demo import evaluation, traffic
from evallens.app.demo.stack import Stack
from evallens.app.demo.steps import StepLog
from evallens.app.progress import progress_for
from evallens.db import create_db_engine, create_session_factory
from evallens.db.sessions import migrate_to_head
from evallens.errors import EvallensError
from evallens.progress import NO_PROGRESS, ProgressReporter, phase
from evallens.settings import CasesSettings, DemoSettings, EvalSettings, ServiceSettings
from evallens.signals import exit_on_signal
from evallens.telemetry import attributes as attr

SMOKE_MAX_MODEL_LEN = 8192  # the tiny model's byte-level tokenizer makes long prompts
DEFAULT_MAX_MODEL_LEN = 2048
BASELINE = "baseline"  # the label of the baseline configuration's runs


@dataclass(frozen=True)
class DemoOptions:
    """How the demo runs."""

    smoke: bool = False
    dashboard: bool = True
    keep_running: bool = True


@dataclass
class DemoReport:
    """What the demo produced."""

    baseline_run_id: str = ""
    candidate_run_id: str = ""
    verdict: str = ""
    num_hints: int = 0
    num_candidates_mined: int = 0
    timings: list[tuple[str, float]] = field(default_factory=list)


def parse_change(assignment: str) -> dict[str, str]:
    """``NAME=VALUE`` of a reference-service setting into an environment entry."""
    name, sep, value = assignment.partition("=")
    if not sep or not name.strip().startswith("EVALLENS_"):
        raise EvallensError(f"the demo's candidate change must be EVALLENS_NAME=VALUE, got {assignment!r}")
    return {name.strip(): value.strip()}


def prepare_model(
    settings: DemoSettings, smoke: bool, progress: ProgressReporter = NO_PROGRESS
) -> tuple[Path, int, str]:
    """The tiny test model for ``--smoke``, else the pulled SmolLM2 (and the harm and accuracy
    classifiers trained once); returns (path, context, note)."""
    if smoke:
        from evallens.service.weights.tiny import build_tiny_llama

        path = settings.data_dir / "models" / "tiny-llama"
        if not (path / "config.json").exists():
            with phase(progress, "building the tiny test model"):
                build_tiny_llama(path, max_position_embeddings=SMOKE_MAX_MODEL_LEN)
        return path, SMOKE_MAX_MODEL_LEN, f"tiny test model at {path}"
    from evallens.service.weights.pull import pull_default_model
    from evals.calibrate.train import prepare_classifier
    from evals.metrics.context import LEARNED

    with phase(progress, "preparing SmolLM2-135M-Instruct (download, dequantize, save; once)"):
        report = pull_default_model(ServiceSettings())
    for metric in LEARNED:
        prepare_classifier(EvalSettings(), metric, progress=progress)
    state = "prepared" if report.built else "already prepared"
    return (
        report.chat_model_path,
        DEFAULT_MAX_MODEL_LEN,
        f"SmolLM2-135M-Instruct {state} at {report.chat_model_path}",
    )


class Demo:
    """Runs the steps in order over one stack; ``stop`` ends every process it started."""

    def __init__(self, options: DemoOptions, console: Console) -> None:
        self.options = options
        self.console = console
        self.settings = DemoSettings()
        self.change = parse_change(self.settings.demo_candidate_change)
        self.log = StepLog(console)
        self.progress = progress_for(console)
        self.report = DemoReport()
        self.stack: Stack | None = None
        self.engine: Engine | None = None
        self.sessions: sessionmaker[Session] | None = None
        self.synced: tuple[int, str, int] | None = None
        # a completed run of the baseline configuration, found before the service starts
        self.reusable_baseline: uuid.UUID | None = None
        self.service_change: dict[str, str] | None = None  # what the running service was started with

    @property
    def demo_dir(self) -> Path:
        """Where the demo keeps its reports, logs and smoke sets."""
        return self.settings.data_dir / "demo"

    def run(self) -> DemoReport:
        """Every step, then wait for Ctrl-C unless asked to exit."""
        try:
            stack = self.prepare()
            self.start_components(stack)
            self.index_knowledge_base(stack)
            eval_set_id, baseline = self.replay_baseline(stack)
            self.gate_a_change(stack, eval_set_id, baseline)
            self.production_traffic(stack)
            if self.options.dashboard:
                with self.log.step("Start the dashboard") as note, phase(self.progress, "starting"):
                    stack.start_dashboard()
                    note(f"open {stack.dashboard_url}")
            self.report.timings = self.log.timings
            self.console.print(f"[bold]evallens demo: {self.log.summary()}[/bold]")
            if self.options.keep_running:
                self.console.print("Everything is running; press Ctrl-C to stop it all.")
                while stack.all_running():
                    time.sleep(1)
            return self.report
        finally:
            self.stop()

    def prepare(self) -> Stack:
        """Model weights, PostgreSQL, the schema and today's span partitions."""
        with self.log.step("Prepare the model, start PostgreSQL and migrate it") as note:
            model_path, max_model_len, model_note = prepare_model(
                self.settings, self.options.smoke, self.progress
            )
            note(model_note)
            self.stack = Stack(self.settings, model_path, max_model_len)
            url = self.stack.open_database()
            self.engine = create_db_engine(url)
            migrate_to_head(self.engine, url, self.settings.partition_days_ahead)
            self.sessions = create_session_factory(self.engine)
            embedded = self.stack.database is not None and self.stack.database.embedded is not None
            note("embedded PostgreSQL" if embedded else "PostgreSQL from EVALLENS_DATABASE_URL")
            return self.stack

    def start_components(self, stack: Stack) -> None:
        """The collector first, so the service's first spans have somewhere to go. Then the service with
        the baseline configuration, or with the change at once when that configuration already has a
        completed baseline run (its fingerprint is read before any model loads), so a second demo does not
        wait for a model it would never ask."""
        assert self.sessions is not None
        with self.log.step("Start the collector and the reference service") as note:
            with phase(self.progress, "starting the collector"):
                stack.start_collector()
            eval_set_id = self.sync_sets()[0]
            with phase(self.progress, "reading the baseline configuration's fingerprint"):
                scoring = evaluation.scoring_description(EvalSettings())
                self.reusable_baseline = evaluation.completed_run(
                    self.sessions, eval_set_id, stack.service_fingerprint(), scoring, BASELINE
                )
            self.service_change = None if self.reusable_baseline is None else self.change
            with phase(self.progress, "starting the reference service (loading the model into vLLM)"):
                stack.start_service(self.service_change)
            note(f"collector {stack.collector_url}, service {stack.service_url}; logs in {stack.logs}")
            if self.reusable_baseline is not None:
                reused = self.reusable_baseline
                note(f"baseline run {reused} reused: the service starts with the change at once")

    def sync_sets(self) -> tuple[int, str, int]:
        """Sync the curated sets (a small copy with ``--smoke``); (set version id, name, version)."""
        assert self.sessions is not None
        if self.synced is None:
            sets = evaluation.curated_sets_dir()
            if self.options.smoke:
                sets = evaluation.write_smoke_sets(
                    self.demo_dir / "smoke-sets", self.settings.demo_smoke_cases_per_scenario
                )
            self.synced = evaluation.sync_sets(self.sessions, sets)
        return self.synced

    def index_knowledge_base(self, stack: Stack) -> None:
        """Upsert the Acme corpus (unchanged documents are not embedded again)."""
        from evallens.service.documents.loader import load_corpus

        with self.log.step("Index the demo knowledge base") as note:
            loaded = load_corpus(evaluation.corpus_dir(), stack.service_url, progress=self.progress)
            note(
                f"{len(loaded.created)} created, {len(loaded.updated)} updated, "
                f"{len(loaded.unchanged)} unchanged; {loaded.num_chunks_embedded} chunks embedded"
            )

    def eval_settings(self, stack: Stack) -> EvalSettings:
        """Eval settings pointed at the demo's service."""
        return EvalSettings(
            eval_endpoint=stack.service_url,
            eval_max_tokens=self.settings.demo_eval_max_tokens,
            eval_concurrency=self.settings.demo_eval_concurrency,
        )

    def replay_baseline(self, stack: Stack) -> tuple[int, uuid.UUID]:
        """Replay the synced sets with the baseline configuration (or reuse its run), tag the run ``main``."""
        assert self.sessions is not None
        with self.log.step("Replay the eval set with the baseline configuration") as note:
            eval_set_id, set_name, version = self.sync_sets()
            if self.reusable_baseline is not None:
                run = evaluation.RunOutcome(self.reusable_baseline, reused=True)
            else:
                run = evaluation.replay(
                    self.sessions, eval_set_id, stack.service_url, BASELINE, self.eval_settings(stack),
                    self.progress,
                )  # fmt: skip
            evaluation.tag_baseline(self.sessions, run.run_id)
            self.report.baseline_run_id = str(run.run_id)
            note(f"{set_name} v{version}: run {run.run_id}{' (reused)' if run.reused else ''}, tagged main")
            return eval_set_id, run.run_id

    def gate_a_change(self, stack: Stack, eval_set_id: int, baseline: uuid.UUID) -> None:
        """Restart the service with one setting changed (unless it runs with it), replay, and gate."""
        assert self.sessions is not None and self.engine is not None
        with self.log.step(f"Change {self.settings.demo_candidate_change}, replay and gate") as note:
            if self.service_change != self.change:
                with phase(self.progress, "restarting the reference service with the change"):
                    stack.restart_service(self.change)
                self.service_change = self.change
            run = evaluation.replay(
                self.sessions, eval_set_id, stack.service_url, "candidate", self.eval_settings(stack),
                self.progress,
            )  # fmt: skip
            body = evaluation.gate(self.sessions, baseline, run.run_id, self.demo_dir / "reports")
            evaluation.print_gate(body, self.console)
            self.report.candidate_run_id = str(run.run_id)
            self.report.verdict, self.report.num_hints = body.verdict, len(body.hints)
            reused = " (reused)" if run.reused else ""
            note(
                f"candidate run {run.run_id}{reused}; gate verdict: {body.verdict}; "
                f"reports in {self.demo_dir / 'reports'}"
            )

    def production_traffic(self, stack: Stack) -> None:
        """Ordinary requests with some thumbs down, then the bad cases they leave behind."""
        from evallens.app.cli.cases import print_candidates
        from evallens.cases.mining import mine_cases
        from evals.readers import mining_readers

        assert self.sessions is not None and self.engine is not None
        with self.log.step("Send production traffic with feedback, then mine bad cases") as note:
            sent = traffic.send_traffic(
                stack.service_url, self.settings.demo_traffic_requests, self.settings.demo_eval_max_tokens,
                self.progress,
            )  # fmt: skip
            # this run's ratings only: a database kept from an earlier demo holds ratings already
            feedback = "SELECT count(*) FROM spans WHERE attributes ->> :target = ANY(:ids)"
            rated = {"target": attr.FEEDBACK_TARGET_TRACE_ID, "ids": sent.trace_ids}
            with phase(self.progress, "waiting for the collector to store the traces"):
                wait_for_rows(self.engine, feedback, rated, sent.num_negative + sent.num_positive)
                wait_for_questions(self.engine, sent.trace_ids)
            with self.sessions() as session:
                # the demo's service runs without API keys, so its traces (like its sets and runs) are the
                # default project's, whatever EVALLENS_CASES_PROJECT says for the user's own work
                mined = mine_cases(
                    session, CasesSettings(), mining_readers(), project=attr.DEFAULT_PROJECT,
                    since=timedelta(hours=1), limit=10, progress=self.progress,
                )  # fmt: skip
                session.commit()  # the questions' new embeddings
            print_candidates(mined, self.console)
            self.report.num_candidates_mined = len(mined.candidates)
            note(f"{sent.num_requests} requests, {sent.num_negative} thumbs down, {sent.num_errors} errors")

    def stop(self) -> None:
        """Stop every child process, then the embedded PostgreSQL."""
        if self.engine is not None:
            self.engine.dispose()
        if self.stack is not None:
            self.stack.stop()


def run_demo(options: DemoOptions, console: Console) -> DemoReport:
    """Run the demo end to end."""
    with stops_on_signals():
        return Demo(options, console).run()


@contextmanager
def stops_on_signals() -> Iterator[None]:
    """Ctrl-C (SIGINT) and SIGTERM end the demo through its clean-up, which stops every child.

    Set explicitly: a process started in the background by a non-interactive shell (a CI script, ``&``)
    inherits SIGINT as ignored, and Python then never raises ``KeyboardInterrupt``; SIGTERM's default
    ends the process at once and leaves its children, each in its own session, running.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {number: signal.getsignal(number) for number in (signal.SIGINT, signal.SIGTERM)}
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, exit_on_signal)
    try:
        yield
    finally:
        for number, handler in previous.items():
            if handler is not None:  # None: set outside Python, nothing of ours to restore
                signal.signal(number, handler)


def wait_for_questions(engine: Engine, trace_ids: list[str], timeout_s: float = 60.0) -> None:
    """Wait until every trace has its request span (with the question) stored: mining reads them."""
    query = text(
        "SELECT count(DISTINCT trace_id) FROM spans WHERE trace_id = ANY(:ids) AND attributes ? :question"
    )
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        with engine.connect() as connection:
            found = connection.execute(
                query, {"ids": trace_ids, "question": attr.GEN_AI_INPUT_MESSAGES}
            ).scalar_one()
        if found >= len(set(trace_ids)):
            return
        time.sleep(1.0)


def wait_for_rows(
    engine: Engine, query: str, parameters: Mapping[str, object], expected: int, timeout_s: float = 60.0
) -> None:
    """Poll ``query`` until it counts ``expected`` rows: span export to the collector is batched."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        with engine.connect() as connection:
            if connection.execute(text(query), dict(parameters)).scalar_one() >= expected:
                return
        time.sleep(1.0)
