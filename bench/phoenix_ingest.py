"""Arize Phoenix ingest on the same OTLP payloads, for comparison with the collector (optional).

Installs ``arize-phoenix`` into a throwaway virtual environment under the cache directory (never
into evallens' own), starts ``phoenix serve`` on free ports with a private working directory, sends
the payloads with the same clients, and waits until every span is in Phoenix's database (SQLite, or
a PostgreSQL of its own with ``--postgres``). When Phoenix cannot be installed or started it says so
in one line and exits 0.

    python -m bench.phoenix_ingest [--spans 5000] [--clients 4] [--batch 500] [--postgres]

(run from the repository root; ``bench/collector_ingest.py --phoenix-spans N`` runs it after itself).
"""

import argparse
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import psycopg

from bench.collector_ingest import Clients, build_payloads
from evallens.db.server import embedded_url, ensure_database, start_embedded
from evallens.ports import free_port

PHOENIX_VERSION = "20.26.1"
DEFAULT_VENV = Path.home() / ".cache" / "evallens" / "bench" / "phoenix-venv"
START_TIMEOUT_S = 300
INGEST_TIMEOUT_S = 1800


class PhoenixUnavailable(Exception):
    """Phoenix could not be installed or started here."""


def phoenix_python(venv: Path) -> Path:
    """The interpreter of a venv holding Phoenix, installing it on first use."""
    python = venv / "bin" / "python"
    if python.exists() and _has_phoenix(python):
        return python
    try:
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, capture_output=True)
        subprocess.run(
            [str(python), "-m", "pip", "install", "-q", f"arize-phoenix[pg]=={PHOENIX_VERSION}"],
            check=True,
            capture_output=True,
            timeout=1200,
        )
    except (OSError, subprocess.SubprocessError) as error:
        detail = getattr(error, "stderr", b"") or b""
        last = detail.decode(errors="replace").strip().splitlines()[-1:] or [str(error)]
        raise PhoenixUnavailable(f"cannot install arize-phoenix=={PHOENIX_VERSION}: {last[0]}") from None
    return python


def _has_phoenix(python: Path) -> bool:
    """Phoenix and its PostgreSQL driver (the ``pg`` extra) import in that venv."""
    check = [str(python), "-c", "import phoenix, asyncpg"]
    return subprocess.run(check, capture_output=True).returncode == 0


def phoenix_rate(payloads: list[bytes], num_clients: int, venv: Path, postgres: bool) -> float:
    """Durable spans/s of Phoenix for ``payloads``; ``PhoenixUnavailable`` when it cannot run here."""
    python = phoenix_python(venv)
    num_spans = _count_request_spans(payloads)
    with tempfile.TemporaryDirectory(prefix="evallens-phoenix-") as scratch:
        server = start_embedded(Path(scratch) / "pg") if postgres else None
        try:
            environment = {
                **os.environ,
                "PHOENIX_WORKING_DIR": scratch,
                "PHOENIX_PORT": str(free_port()),
                "PHOENIX_GRPC_PORT": str(free_port()),
            }
            if server is not None:
                ensure_database(embedded_url(server, "postgres"), "phoenix")
                environment["PHOENIX_SQL_DATABASE_URL"] = embedded_url(server, "phoenix")
            count = _counter(Path(scratch), environment.get("PHOENIX_SQL_DATABASE_URL"))
            return _measure(python, environment, payloads, num_clients, num_spans, count)
        finally:
            if server is not None:
                server.cleanup()


def _measure(
    python: Path,
    environment: dict[str, str],
    payloads: list[bytes],
    num_clients: int,
    num_spans: int,
    count: "Counter",
) -> float:
    base = f"http://127.0.0.1:{environment['PHOENIX_PORT']}"
    log = Path(environment["PHOENIX_WORKING_DIR"]) / "phoenix.log"
    with log.open("wb") as output:
        phoenix = subprocess.Popen(
            [str(python), "-m", "phoenix.server.main", "serve"], env=environment, stdout=output, stderr=output
        )
        try:
            _wait_until_up(phoenix, base, log)
            clients = Clients(f"{base}/v1/traces", payloads, num_clients)
            started = time.perf_counter()
            clients.run()
            deadline = time.monotonic() + INGEST_TIMEOUT_S
            while count() < num_spans:
                if time.monotonic() > deadline:
                    raise PhoenixUnavailable(f"Phoenix stored {count()} of {num_spans} spans in time")
                time.sleep(0.05)
            return num_spans / (time.perf_counter() - started)
        finally:
            phoenix.terminate()
            phoenix.wait(60)


def _wait_until_up(phoenix: subprocess.Popen[bytes], base: str, log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if phoenix.poll() is not None:
            tail = log.read_text(errors="replace").strip().splitlines()[-1:] or ["no output"]
            raise PhoenixUnavailable(f"phoenix serve exited: {tail[0]}")
        try:
            if httpx.get(f"{base}/healthz", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    raise PhoenixUnavailable(f"phoenix serve did not answer within {START_TIMEOUT_S} s")


class Counter:
    """Counts the spans in Phoenix's database."""

    def __init__(self, sqlite_path: Path | None, postgres_url: str | None) -> None:
        self.sqlite_path, self.postgres_url = sqlite_path, postgres_url

    def __call__(self) -> int:
        try:
            if self.postgres_url is not None:
                with psycopg.connect(self.postgres_url) as connection:
                    row = connection.execute("SELECT count(*) FROM spans").fetchone()
            else:
                assert self.sqlite_path is not None
                with sqlite3.connect(f"file:{self.sqlite_path}?mode=ro", uri=True) as connection:
                    row = connection.execute("SELECT count(*) FROM spans").fetchone()
        except (sqlite3.Error, psycopg.Error):
            return 0  # the table is not there yet
        return int(row[0]) if row else 0


def _counter(working_dir: Path, postgres_url: str | None) -> Counter:
    return Counter(None if postgres_url else working_dir / "phoenix.db", postgres_url)


def _count_request_spans(payloads: list[bytes]) -> int:
    from collector import _wire

    return sum(_wire.count_records(body) for body in payloads)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spans", type=int, default=5000, help="spans to send (default: %(default)s)")
    parser.add_argument("--clients", type=int, default=4, help="concurrent senders (default: %(default)s)")
    parser.add_argument(
        "--batch", type=int, default=500, help="spans per OTLP request (default: %(default)s)"
    )
    parser.add_argument("--postgres", action="store_true", help="Phoenix on PostgreSQL instead of SQLite")
    parser.add_argument(
        "--venv",
        type=Path,
        default=DEFAULT_VENV,
        help="throwaway venv Phoenix is installed into (default: %(default)s)",
    )
    parser.add_argument(
        "--compare-to", type=float, help="the collector's durable spans/s, to print the ratio"
    )
    args = parser.parse_args()
    payloads = build_payloads(args.spans, args.batch)
    try:
        rate = phoenix_rate(payloads, args.clients, args.venv, args.postgres)
    except PhoenixUnavailable as error:
        print(f"Phoenix comparison skipped: {error}")
        return
    backend = "PostgreSQL" if args.postgres else "SQLite"
    ratio = f", collector {args.compare_to / rate:,.0f}x" if args.compare_to else ""
    print(f"Phoenix {PHOENIX_VERSION} ({backend}): {rate:,.0f} durable spans/s ({args.spans} spans){ratio}")


if __name__ == "__main__":
    main()
