"""The demo's running stack: embedded PostgreSQL, collector, reference service and dashboard."""

import json
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from evallens.app.demo.processes import ManagedProcess, ProcessFailed, ProcessGroup
from evallens.db import DatabaseServer, open_database
from evallens.settings import (
    CollectorSettings,
    DashboardSettings,
    DemoSettings,
    ServiceAddressSettings,
    child_environment,
)
from evallens.telemetry.attributes import DEFAULT_PROJECT

EVALLENS = [sys.executable, "-m", "evallens"]


@dataclass
class Stack:
    """Where each component listens and the processes that run them."""

    settings: DemoSettings
    model_path: Path
    max_model_len: int
    database: DatabaseServer | None = None
    processes: ProcessGroup = field(default_factory=ProcessGroup)

    @property
    def logs(self) -> Path:
        """Folder of every child's log file."""
        return self.settings.data_dir / "demo" / "logs"

    @property
    def service_url(self) -> str:
        """Base URL of the reference service."""
        return ServiceAddressSettings().service_url

    @property
    def collector_url(self) -> str:
        """Base URL of the collector's OTLP/HTTP receiver."""
        return f"http://127.0.0.1:{CollectorSettings().collector_http_port}"

    @property
    def dashboard_url(self) -> str:
        """URL of the dashboard."""
        return f"http://127.0.0.1:{DashboardSettings().dashboard_port}"

    @property
    def database_url(self) -> str:
        """URL of the database every component uses."""
        assert self.database is not None, "the database is not open yet"
        return self.database.url

    def open_database(self) -> str:
        """Start (or join) the embedded PostgreSQL, or use the configured server."""
        self.database = open_database(self.settings)
        return self.database.url

    def start_collector(self) -> None:
        """The collector, scraping the service's /metrics (which include vLLM's)."""
        collector = self.processes.add(
            ManagedProcess(
                "collector",
                [*EVALLENS, "collector"],
                self.logs / "collector.log",
                {
                    "EVALLENS_DATABASE_URL": self.database_url,
                    "EVALLENS_COLLECTOR_SCRAPE_TARGETS": f"{self.service_url}/metrics",
                    "EVALLENS_COLLECTOR_SCRAPE_INTERVAL_S": "5",
                },
            )
        )
        collector.wait_healthy(f"{self.collector_url}/healthz", self.settings.demo_ready_timeout_s)

    def service_environment(self, change: dict[str, str] | None = None) -> dict[str, str]:
        """The reference service's settings: this stack's database, model and collector; ``change``
        overrides any of them."""
        return {
            "EVALLENS_DATABASE_URL": self.database_url,
            "EVALLENS_MODEL_PATH": str(self.model_path),
            "EVALLENS_MAX_MODEL_LEN": str(self.max_model_len),
            "EVALLENS_OTLP_ENDPOINT": f"{self.collector_url}/v1/traces",
            "EVALLENS_RETRIEVAL_BUDGET_MS": str(self.settings.demo_retrieval_budget_ms),
            **(change or {}),
        }

    def service_fingerprint(self, change: dict[str, str] | None = None) -> str:
        """The config fingerprint the service would answer with (`evallens service config`, the same
        settings, nothing started or loaded)."""
        command = [*EVALLENS, "service", "config"]
        try:
            described = subprocess.run(
                command,
                env=child_environment(self.service_environment(change)),
                capture_output=True,
                text=True,
                timeout=self.settings.demo_ready_timeout_s,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise ProcessFailed(
                f"`evallens service config` took over {self.settings.demo_ready_timeout_s:.0f} s"
            ) from None
        if described.returncode != 0:
            last = (described.stderr.strip().splitlines() or ["no output"])[-1]
            raise ProcessFailed(f"`evallens service config` exited with {described.returncode}: {last}")
        return str(json.loads(described.stdout)["fingerprint"])

    def start_service(self, change: dict[str, str] | None = None) -> None:
        """The reference service exporting traces to the collector; ``change`` overrides settings."""
        service = self.processes.add(
            ManagedProcess(
                "service", [*EVALLENS, "service"], self.logs / "service.log", self.service_environment(change)
            )
        )
        service.wait_healthy(f"{self.service_url}/readyz", self.settings.demo_ready_timeout_s)

    def restart_service(self, change: dict[str, str]) -> None:
        """Stop the service and start it again with ``change`` applied."""
        self.processes.stop("service")
        self.start_service(change)

    def start_dashboard(self) -> None:
        """The Streamlit dashboard."""
        dashboard = self.processes.add(
            ManagedProcess(
                "dashboard",
                [*EVALLENS, "dashboard"],
                self.logs / "dashboard.log",
                # the demo's traces, sets and runs are the default project's (see the mining step)
                {"EVALLENS_DATABASE_URL": self.database_url, "EVALLENS_DASHBOARD_PROJECT": DEFAULT_PROJECT},
            )
        )
        dashboard.wait_healthy(f"{self.dashboard_url}/_stcore/health", self.settings.demo_ready_timeout_s)

    def all_running(self) -> bool:
        """Whether every child is still alive."""
        return all(process.running for process in self.processes.processes)

    def stop(self) -> None:
        """Stop every child, then the embedded PostgreSQL."""
        self.processes.stop_all()
        if self.database is not None:
            self.database.stop()
            self.database = None
