"""Fixtures for the eval engine: sessions on the test database, the CLI, and a scripted target."""

import asyncio
import json
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse

from evallens.ports import free_port
from evallens.settings import child_environment
from evals.metrics._embedding import MiniLmSimilarity

SETS = Path(__file__).parent / "sets"


@pytest.fixture(scope="session")
def similarity() -> MiniLmSimilarity:
    return MiniLmSimilarity()


def run_cli(
    *args: str, database_url: str, extra_env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    env = {"EVALLENS_DATABASE_URL": database_url, "COLUMNS": "200", **(extra_env or {})}
    return subprocess.run(
        [sys.executable, "-m", "evallens", *args],
        env=child_environment(env),
        capture_output=True,
        text=True,
        timeout=300,
    )


def start_replay(
    database_url: str, target_url: str, extra_env: dict[str, str] | None = None
) -> subprocess.Popen[str]:
    """``evallens eval run --set mini-support`` against ``target_url``, started in the background (for
    tests that stop or kill it mid-replay); the set must be synced."""
    return subprocess.Popen(
        [sys.executable, "-m", "evallens", "eval", "run", "--set", "mini-support", "--endpoint", target_url],
        env=child_environment({"EVALLENS_DATABASE_URL": database_url, **(extra_env or {})}),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


@dataclass
class ScriptedTarget:
    """An OpenAI-compatible server that answers each question from a script (a stand-in target)."""

    url: str
    answers: dict[str, str] = field(default_factory=dict)
    retrieved: dict[str, list[str]] = field(default_factory=dict)
    semantic_hits: set[str] = field(default_factory=set)
    config: dict[str, Any] = field(default_factory=lambda: {"fingerprint": "cfg-1", "model": "scripted"})
    documents: list[str] = field(default_factory=list)
    headers_seen: list[dict[str, str]] = field(default_factory=list)
    failing: set[str] = field(default_factory=set)
    fail_all: bool = False
    failure_message: str = "engine exploded"  # the error message a failing request answers with
    ready: bool = True
    hooks: list[dict[str, Any]] = field(default_factory=list)
    raw_chunks: dict[str, list[str]] = field(default_factory=dict)  # question -> `data:` payloads as sent
    raw_config: str | None = None  # the /v1/config body as sent, instead of ``config``
    no_config: bool = False  # /v1/config answers 404, as any OpenAI-compatible server but evallens's
    raw_documents: str | None = None  # the /v1/documents body as sent, instead of ``documents``
    answer_delay_s: float = 0.0  # how long each chat request waits before it answers
    holding: bool = False  # while True, chat requests wait unanswered (a run stays mid-replay)


def _scripted_app(target: ScriptedTarget) -> FastAPI:
    app = FastAPI()

    @app.get("/v1/config")
    async def config() -> Response:
        if target.no_config:
            return JSONResponse({"detail": "Not Found"}, status_code=404)
        if target.raw_config is not None:
            return Response(target.raw_config, media_type="application/json")
        return JSONResponse(target.config)

    @app.get("/v1/models")
    async def models() -> JSONResponse:
        return JSONResponse({"object": "list", "data": [{"id": "scripted"}]})

    @app.get("/readyz")
    async def readyz() -> JSONResponse:
        return JSONResponse({"ready": target.ready}, status_code=200 if target.ready else 503)

    @app.post("/hook")
    async def hook(request: Request) -> Response:
        target.hooks.append(await request.json())
        return Response(status_code=204)

    @app.get("/v1/documents")
    async def documents() -> Response:
        if target.raw_documents is not None:
            return Response(target.raw_documents, media_type="application/json")
        return JSONResponse({"documents": [{"id": d} for d in target.documents]})

    @app.post("/v1/chat/completions")
    async def chat(request: Request) -> StreamingResponse:
        body = await request.json()
        target.headers_seen.append(dict(request.headers))
        await asyncio.sleep(target.answer_delay_s)
        while target.holding:
            await asyncio.sleep(0.05)
        question = body["messages"][-1]["content"]
        if target.fail_all or question in target.failing:
            return JSONResponse({"error": {"message": target.failure_message}}, status_code=500)  # type: ignore[return-value]
        answer = target.answers.get(question, "I'm sorry, but I can't help with that.")
        extension = {
            "retrieved_ids": target.retrieved.get(question, []),
            "cache": {"exact": False, "semantic": question in target.semantic_hits},
            "degraded": False,
        }

        async def stream() -> AsyncIterator[str]:
            if question in target.raw_chunks:
                for payload in target.raw_chunks[question]:
                    yield f"data: {payload}\n\n"
                yield "data: [DONE]\n\n"
                return
            words = answer.split(" ")
            for i in range(0, len(words), 3):
                piece = " ".join(words[i : i + 3]) + (" " if i + 3 < len(words) else "")
                yield f"data: {json.dumps({'choices': [{'index': 0, 'delta': {'content': piece}}]})}\n\n"
            final = {"choices": [], "usage": {"prompt_tokens": 12, "completion_tokens": len(words)}}
            yield f"data: {json.dumps({**final, 'evallens': extension})}\n\n"
            yield "data: [DONE]\n\n"

        trace = f"{abs(hash(question)):032x}"[-32:]
        return StreamingResponse(stream(), media_type="text/event-stream", headers={"x-trace-id": trace})

    return app


@pytest.fixture
def scripted_target() -> Iterator[ScriptedTarget]:
    port = free_port()
    target = ScriptedTarget(url=f"http://127.0.0.1:{port}")
    server = uvicorn.Server(
        uvicorn.Config(_scripted_app(target), host="127.0.0.1", port=port, log_level="error")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if time.monotonic() > deadline:
            raise RuntimeError("scripted target did not start")
        time.sleep(0.05)
    yield target
    server.should_exit = True
    thread.join(timeout=10)
