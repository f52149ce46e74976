"""The LLM judge: any OpenAI-compatible endpoint decides metric verdicts, cached and concurrent.

A request that fails or gets a malformed reply yields an outcome without a verdict and with the
reason; the judge never raises for one bad reply, so one case can never fail a whole run.
"""

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

import httpx
from sqlalchemy.orm import Session, sessionmaker

from evallens.db.models.traces import DEFAULT_PROJECT
from evals.metrics.judge.cache import CachedVerdict, cache_key, load_verdicts, store_verdicts
from evals.metrics.judge.client import JudgeClient, JudgeUnavailable
from evals.metrics.judge.prompts import (
    MalformedReply,
    messages,
    parse_verdict,
    prompt_version,
    reference_text,
)
from evals.metrics.result import JudgeOutcome, JudgeRequest


class LlmJudge:
    """Decides verdicts with ``client``; caches them through ``sessions`` when given, for ``project``
    alone (whose questions and answers they judge)."""

    def __init__(
        self,
        client: JudgeClient,
        *,
        concurrency: int,
        sessions: sessionmaker[Session] | None = None,
        project: str = DEFAULT_PROJECT,
    ) -> None:
        self.client = client
        self.concurrency = concurrency
        self.sessions = sessions
        self.project = project

    def decide(self, requests: Sequence[JudgeRequest]) -> list[JudgeOutcome]:
        """One outcome per request, in order (identical requests are asked once)."""
        if not requests:
            return []
        with self.client.open() as http:
            try:
                model = self.client.model_name(http)
            except JudgeUnavailable as error:
                return [JudgeOutcome(None, str(error)) for _ in requests]
            keys = [self._key(model, request) for request in requests]
            outcomes = self._cached(keys)
            missing = {
                key: request for key, request in zip(keys, requests, strict=True) if key not in outcomes
            }
            asked = self._ask_all(http, missing)
        self._store(model, missing, asked)
        outcomes.update(asked)
        return [outcomes[key] for key in keys]

    def _key(self, model: str, request: JudgeRequest) -> str:
        version = prompt_version(request.metric)
        return cache_key(
            self.project, model, version, request.question, reference_text(request), request.answer
        )

    def _cached(self, keys: list[str]) -> dict[str, JudgeOutcome]:
        if self.sessions is None:
            return {}
        with self.sessions() as session:
            found = load_verdicts(session, self.project, keys)
        return {key: JudgeOutcome(verdict, reason, cached=True) for key, (verdict, reason) in found.items()}

    def _ask_all(self, http: httpx.Client, requests: dict[str, JudgeRequest]) -> dict[str, JudgeOutcome]:
        """The first request alone (it learns whether the endpoint does JSON-schema output), then the rest."""
        keys = list(requests)
        if not keys:
            return {}
        asked = {keys[0]: self._ask(http, requests[keys[0]])}
        with ThreadPoolExecutor(max_workers=self.concurrency) as pool:
            rest = pool.map(lambda key: self._ask(http, requests[key]), keys[1:])
            asked.update(zip(keys[1:], rest, strict=True))
        return asked

    def _ask(self, http: httpx.Client, request: JudgeRequest) -> JudgeOutcome:
        try:
            reply, finish = self.client.complete(http, messages(request))
        except JudgeUnavailable as error:
            return JudgeOutcome(None, str(error))
        try:
            positive, reason = parse_verdict(reply)
        except MalformedReply as error:
            cut = " (the reply was cut off at max_tokens)" if finish == "length" else ""
            return JudgeOutcome(None, f"{error}{cut}")
        return JudgeOutcome(positive, reason)

    def _store(
        self, model: str, requests: dict[str, JudgeRequest], outcomes: dict[str, JudgeOutcome]
    ) -> None:
        if self.sessions is None:
            return
        verdicts = []
        for key, request in requests.items():
            decided = outcomes[key].verdict
            if decided is not None:
                version = prompt_version(request.metric)
                verdicts.append(
                    CachedVerdict(
                        key, self.project, model, version, request.question, reference_text(request),
                        request.answer, decided, outcomes[key].reason,
                    )
                )  # fmt: skip
        with self.sessions.begin() as session:
            store_verdicts(session, verdicts)


__all__ = ["JudgeClient", "JudgeUnavailable", "LlmJudge"]
