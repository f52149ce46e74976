"""Load a folder of Markdown documents into a running service through ``POST /v1/documents``."""

from dataclasses import dataclass, field
from pathlib import Path

import httpx

from evallens.errors import EvallensError
from evallens.progress import NO_PROGRESS, ProgressReporter


class KnowledgeBaseLoadError(EvallensError):
    """The corpus folder or the service could not be used."""


@dataclass
class LoadReport:
    """What loading changed: document ids by upsert status, and chunks embedded."""

    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    num_chunks_embedded: int = 0


def read_corpus(path: Path) -> list[dict[str, object]]:
    """One request body per ``*.md`` file: id = file stem, title = first ``#`` heading."""
    files = [path] if path.is_file() else sorted(path.glob("*.md"))
    if not files:
        raise KnowledgeBaseLoadError(f"no Markdown documents (*.md) in {path}")
    bodies: list[dict[str, object]] = []
    for file in files:
        text = file.read_text(encoding="utf-8")
        first = text.lstrip().splitlines()[0] if text.strip() else ""
        title = first.lstrip("#").strip() if first.startswith("#") else file.stem
        bodies.append({"id": file.stem, "title": title, "text": text, "metadata": {"source": path.name}})
    return bodies


def load_corpus(
    path: Path,
    service_url: str,
    *,
    client: httpx.Client | None = None,
    api_key: str | None = None,
    progress: ProgressReporter = NO_PROGRESS,
) -> LoadReport:
    """Upsert every document of ``path`` into the service at ``service_url``: with ``api_key``, into that
    key's project's knowledge base (a service with auth needs one), else the default project's."""
    bodies = read_corpus(path)
    headers = {} if api_key is None else {"authorization": f"Bearer {api_key}"}
    report = LoadReport()
    own = client is None
    http = client or httpx.Client(base_url=service_url, timeout=120.0)
    try:
        progress.begin(f"loading {len(bodies)} documents", len(bodies))
        for body in bodies:
            try:
                response = http.post("/v1/documents", json=body, headers=headers)
            except httpx.HTTPError as error:
                raise KnowledgeBaseLoadError(f"cannot reach the service at {service_url}: {error}") from None
            if response.status_code >= 400:
                raise KnowledgeBaseLoadError(
                    f"{body['id']}: the service answered {response.status_code}: {response.text[:200]}"
                )
            result = response.json()
            getattr(report, result["status"]).append(result["id"])
            report.num_chunks_embedded += int(result["num_chunks_embedded"])
            progress.advance(detail=str(body["id"]))
    finally:
        progress.end()
        if own:
            http.close()
    return report
