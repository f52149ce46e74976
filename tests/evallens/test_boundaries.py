"""Layer rules that import-linter cannot see: environment reads, and import-time side effects."""

import ast
import subprocess
import sys
import tomllib
from pathlib import Path

from tests.conftest import REPO_ROOT

SOURCE_DIRS = ["platform/evallens", "collector", "evals", "dashboard", "migrations"]
SETTINGS_PACKAGE = REPO_ROOT / "platform" / "evallens" / "settings"


def environment_uses(path: Path) -> list[str]:
    """Places in ``path`` that touch ``os.environ`` or ``os.getenv``."""
    tree = ast.parse(path.read_text(), filename=str(path))
    found: list[int] = []
    for node in ast.walk(tree):
        touches_os = (
            isinstance(node, ast.Attribute)
            and node.attr in {"getenv", "environ", "environb", "putenv"}
            and isinstance(node.value, ast.Name)
            and node.value.id == "os"
        )
        imports_from_os = (
            isinstance(node, ast.ImportFrom)
            and node.module == "os"
            and any(alias.name in {"environ", "getenv", "putenv"} for alias in node.names)
        )
        if touches_os or imports_from_os:
            found.append(getattr(node, "lineno", 0))
    return [f"{path.relative_to(REPO_ROOT)}:{line}" for line in sorted(found)]


def test_nothing_touches_the_environment_outside_settings() -> None:
    offenders = [
        place
        for directory in SOURCE_DIRS
        for path in (REPO_ROOT / directory).rglob("*.py")
        if SETTINGS_PACKAGE not in path.parents
        for place in environment_uses(path)
    ]
    assert offenders == []


def test_the_scanner_finds_reads_and_writes() -> None:
    sample = REPO_ROOT / "tests" / "evallens" / "_sample_env_use.py"
    sample.write_text("import os\nfrom os import getenv\nx = os.environ.get('A')\nos.environ['B'] = '1'\n")
    try:
        assert environment_uses(sample) == [
            "tests/evallens/_sample_env_use.py:2",
            "tests/evallens/_sample_env_use.py:3",
            "tests/evallens/_sample_env_use.py:4",
        ]
    finally:
        sample.unlink()


IMPORT_PROBE = """
import sys, threading, importlib, psutil
for name in sys.argv[1:]:
    importlib.import_module(name)
process = psutil.Process()
print(threading.active_count(), len(process.children()), len(process.net_connections()))
"""

PACKAGES = ["evallens", "evallens.app.cli", "evallens.db", "evallens.settings", "evallens.telemetry"]


def test_importing_starts_nothing() -> None:
    importable = [*PACKAGES]
    for name in ["collector", "evals", "dashboard", "evallens.service"]:
        if (
            REPO_ROOT / ("platform/evallens/service" if name == "evallens.service" else name) / "__init__.py"
        ).exists():
            importable.append(name)
    result = subprocess.run(
        [sys.executable, "-c", IMPORT_PROBE, *importable], capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr
    threads, children, connections = map(int, result.stdout.split())
    assert (threads, children, connections) == (1, 0, 0)


def test_cli_does_not_import_components_at_import_time() -> None:
    probe = (
        "import sys, evallens.app.cli; print(sorted(m for m in sys.modules"
        " if m.split('.')[0] in {'collector', 'evals', 'dashboard', 'vllm', 'torch', 'streamlit'}"
        " or m.startswith('evallens.service')))"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_the_eval_commands_start_without_the_heavy_numeric_libraries() -> None:
    """Every `evallens eval ...` command imports ``evals.commands``; scipy.stats alone would add over a
    second of CPU to each start (a set sync, a tag, a typo), torch and the embedding model more."""
    heavy = {"scipy", "torch", "sentence_transformers", "transformers", "sklearn", "pandas"}
    probe = f"import sys, evals.commands; print(sorted({{m.split('.')[0] for m in sys.modules}} & {heavy!r}))"
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def layered_modules() -> set[str]:
    """Every module named in a layer of the import-linter layers contract."""
    contracts = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    layers = [layer for contract in contracts if contract["type"] == "layers" for layer in contract["layers"]]
    return {name.strip() for layer in layers for name in layer.replace(":", "|").split("|")}


def test_every_core_and_service_module_is_in_a_layer_and_no_import_is_exempt() -> None:
    modules = {
        f"{package}.{path.stem}"
        for package in ("evallens", "evallens.service")
        for path in (REPO_ROOT / "platform" / package.replace(".", "/")).iterdir()
        if (path.suffix == ".py" and path.name != "__init__.py") or (path / "__init__.py").exists()
    }
    assert modules - layered_modules() == set()
    contracts = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    assert [contract.get("ignore_imports") for contract in contracts] == [None] * len(contracts)
