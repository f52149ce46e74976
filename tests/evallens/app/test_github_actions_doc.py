"""``docs/github-actions-gate.md`` runs as written: its shell steps, on a fresh HOME and an empty database,
first as the push to main (baseline), then as a pull request (gate), each a job of its own."""

import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import psutil
import pytest
import yaml

from evallens.app.demo.evaluation import curated_sets_dir
from evallens.ports import free_port
from evallens.service.weights.tiny import build_tiny_llama
from evallens.settings import child_environment

pytestmark = [pytest.mark.slow, pytest.mark.timeout(3000)]  # two jobs, each starting vLLM

DOC = Path(__file__).resolve().parents[3] / "docs" / "github-actions-gate.md"
VENV = Path.home() / ".cache" / "evallens" / "venv"
CASES_PER_SCENARIO = 2
EVAL_MAX_TOKENS = 32  # the default (256) is sized for real answers; no assertion reads them
TINY_MAX_MODEL_LEN = 8192


def workflow_job() -> dict[str, Any]:
    """The one job of the workflow in the doc's YAML block."""
    block = DOC.read_text().split("```yaml\n", 1)[1].split("```", 1)[0]
    (job,) = yaml.safe_load(block)["jobs"].values()
    return dict(job)


def step_applies(condition: str | None, event: str, workdir: Path) -> bool:
    """The few GitHub expressions the doc uses: always(), the event name, hashFiles(path) != ''."""
    if condition is None:
        return True
    for part in (part.strip() for part in condition.split("&&")):
        if part == "always()":
            continue
        if match := re.fullmatch(r"github\.event_name == '(\w+)'", part):
            if match[1] != event:
                return False
        elif match := re.fullmatch(r"hashFiles\('([^']+)'\) != ''", part):
            if not (workdir / match[1]).exists():
                return False
        else:
            raise AssertionError(f"the doc uses an expression this test does not know: {part}")
    return True


def job_environment(
    job: dict[str, Any], database_url: str, home: Path, extra: dict[str, str]
) -> dict[str, str]:
    """The job's env with its secrets and contexts filled in, on a fresh HOME."""
    values = {"secrets.EVALLENS_DATABASE_URL": database_url, "github.sha": "0" * 40}
    environment = {
        name: re.sub(r"\$\{\{\s*([\w.]+)\s*\}\}", lambda m: values[m[1]], str(value))
        for name, value in job["env"].items()
    }
    return child_environment({**environment, "HOME": str(home), **extra})


def processes_of(home: Path) -> list[psutil.Process]:
    """Processes started by the doc's steps (they carry the fresh HOME)."""
    found = []
    for process in psutil.process_iter():
        try:
            if process.pid != psutil.Process().pid and process.environ().get("HOME") == str(home):
                found.append(process)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    return found


def stop_processes_of(home: Path) -> None:
    """End the job: what its steps left running in the background is stopped, as the runner does."""
    processes = processes_of(home)
    for process in processes:
        process.terminate()
    _, alive = psutil.wait_procs(processes, timeout=30)
    for process in alive:
        process.kill()


def run_job(
    event: str, workdir: Path, environment: dict[str, str], log: list[str]
) -> dict[str, subprocess.CompletedProcess[str]]:
    """Every ``run`` step that applies to ``event``, each in its own ``bash -e`` as Actions runs it."""
    results: dict[str, subprocess.CompletedProcess[str]] = {}
    for step in workflow_job()["steps"]:
        if "run" not in step or not step_applies(step.get("if"), event, workdir):
            continue
        if step["run"].strip() == "make install":  # the test runs in the installed environment
            continue
        output = workdir / f"step-{len(results)}.log"
        with output.open("w") as out:  # a file, not a pipe: a step may leave the service running
            completed = subprocess.run(
                ["bash", "-e", "-c", step["run"]],
                cwd=workdir, env=environment, stdout=out, stderr=subprocess.STDOUT, text=True, timeout=900,
            )  # fmt: skip
        text = output.read_text()
        log.append(f"--- {event}: {step['name']} (exit {completed.returncode})\n{text}")
        results[step["name"]] = subprocess.CompletedProcess(completed.args, completed.returncode, text)
        if completed.returncode != 0:
            break
    return results


def write_small_sets(workdir: Path) -> int:
    """The checkout's curated sets, cut to a few cases per scenario (same set name); returns how many
    cases they hold."""
    target = workdir / "evals" / "datasets" / "acme" / "sets"
    target.mkdir(parents=True)
    num_cases = 0
    for source in sorted(curated_sets_dir().glob("*.yaml")):
        content = yaml.safe_load(source.read_text())
        content["cases"] = content["cases"][:CASES_PER_SCENARIO]
        num_cases += len(content["cases"])
        (target / source.name).write_text(yaml.safe_dump(content, sort_keys=False, allow_unicode=True))
    return num_cases


@pytest.fixture
def fresh_runner(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path, int]]:
    """A fresh HOME with only the installed venv in it (``make install``), a checkout folder and the
    number of cases in its sets."""
    home = tmp_path_factory.mktemp("h")  # vLLM's socket paths must stay short
    (home / ".cache" / "evallens").mkdir(parents=True)
    (home / ".cache" / "evallens" / "venv").symlink_to(VENV)
    workdir = tmp_path_factory.mktemp("w")
    num_cases = write_small_sets(workdir)
    yield home, workdir, num_cases
    stop_processes_of(home)


def test_the_github_actions_example_runs_as_written(
    fresh_runner: tuple[Path, Path, int], empty_database_url: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    home, workdir, num_cases = fresh_runner
    model = build_tiny_llama(
        tmp_path_factory.mktemp("m") / "tiny", max_position_embeddings=TINY_MAX_MODEL_LEN
    )
    extra = {
        "EVALLENS_SERVICE_PORT": str(free_port()),
        "EVALLENS_MODEL_PATH": str(model),
        "EVALLENS_MAX_MODEL_LEN": str(TINY_MAX_MODEL_LEN),
        "EVALLENS_RETRIEVAL_BUDGET_MS": "30000",  # budgets are not under test on a loaded machine
        "EVALLENS_EVAL_SPAN_WAIT_S": "0",  # the example exports no spans to wait for
        # what the steps do is under test, not the answers: short ones, all cases in flight at once
        "EVALLENS_EVAL_MAX_TOKENS": str(EVAL_MAX_TOKENS),
        "EVALLENS_EVAL_CONCURRENCY": str(num_cases),
    }
    environment = job_environment(workflow_job(), empty_database_url, home, extra)
    log: list[str] = []

    push = run_job("push", workdir, environment, log)
    assert [name for name, result in push.items() if result.returncode != 0] == [], "\n".join(log)
    assert set(push) == {"Migrate the database", "Start the service under test", "Sync eval sets",
                         "Baseline on main"}  # fmt: skip
    baseline = orjson.loads((workdir / "run.json").read_bytes())
    assert f"baseline run {baseline['run_id']} tagged main" in push["Baseline on main"].stdout
    stop_processes_of(home)  # the next job starts on a new runner

    pull_request = run_job("pull_request", workdir, environment, log)
    assert [name for name, result in pull_request.items() if result.returncode != 0] == [], "\n".join(log)
    assert "Gate" in pull_request and "Baseline on main" not in pull_request
    verdict = orjson.loads((workdir / "gate.json").read_bytes())
    assert verdict["verdict"] == "pass" and verdict["exit_code"] == 0
    assert verdict["baseline_run_id"] == baseline["run_id"]
    assert all(Path(workdir, path).is_file() for path in verdict["reports"].values())
    assert f"gate verdict pass for run {verdict['candidate_run_id']}" in pull_request["Verdict"].stdout
