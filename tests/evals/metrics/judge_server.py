"""A stand-in judge endpoint for faults a real engine will not produce on demand.

It answers the OpenAI chat API with a scripted fault: malformed text, an HTTP error, a cut-off
reply, or a 400 for JSON-schema output. Used only for those faults; the judge's happy path and
its cache are tested against the real vLLM engine (tests/evals/test_judge_vllm.py).
"""

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from evallens.ports import free_port


@dataclass
class FaultyJudge:
    """What the stand-in answers, and the request bodies it received."""

    url: str
    reply: str = '{"verdict": "yes", "reason": "fine"}'
    status: int = 200
    error_message: str = "judge exploded"  # what an answer with another ``status`` says went wrong
    finish_reason: str = "stop"
    reject_response_format: bool = False
    models: list[str] = field(default_factory=lambda: ["faulty-judge"])
    models_down: int = 0  # how many more /v1/models requests answer 503 (an endpoint still starting)
    requests: list[dict[str, Any]] = field(default_factory=list)


def _app(judge: FaultyJudge) -> FastAPI:
    app = FastAPI()

    @app.get("/v1/models")
    async def models() -> JSONResponse:
        if judge.models_down > 0:
            judge.models_down -= 1
            return JSONResponse({"error": {"message": "starting"}}, status_code=503)
        return JSONResponse({"object": "list", "data": [{"id": name} for name in judge.models]})

    @app.post("/v1/chat/completions")
    async def chat(request: Request) -> JSONResponse:
        body = await request.json()
        judge.requests.append(body)
        if judge.reject_response_format and "response_format" in body:
            return JSONResponse({"error": {"message": "response_format is not supported"}}, status_code=400)
        if judge.status != 200:
            return JSONResponse({"error": {"message": judge.error_message}}, status_code=judge.status)
        choice = {"index": 0, "message": {"role": "assistant", "content": judge.reply},
                  "finish_reason": judge.finish_reason}  # fmt: skip
        return JSONResponse({"choices": [choice]})

    return app


@contextmanager
def faulty_judge() -> Iterator[FaultyJudge]:
    """Serve a ``FaultyJudge`` on a free loopback port for the duration of the block."""
    port = free_port()
    judge = FaultyJudge(url=f"http://127.0.0.1:{port}")
    server = uvicorn.Server(uvicorn.Config(_app(judge), host="127.0.0.1", port=port, log_level="error"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if time.monotonic() > deadline:
            raise RuntimeError("the stand-in judge did not start")
        time.sleep(0.05)
    try:
        yield judge
    finally:
        server.should_exit = True
        thread.join(timeout=10)
