"""A plain client for any OpenAI-compatible chat endpoint, as the judge uses it."""

from typing import Any

import httpx

from evallens.credentials import mask_credentials, masked_excerpt, masked_url
from evals.metrics.judge.prompts import VERDICT_SCHEMA


class JudgeUnavailable(Exception):
    """The judge endpoint did not give a reply (unreachable, an HTTP error, no content)."""


class JudgeClient:
    """Chat completions against one endpoint; asks for JSON-schema output, and falls back without it."""

    def __init__(
        self, endpoint: str, *, model: str | None, api_key: str, timeout_s: float, max_tokens: int
    ) -> None:
        self.base_url = endpoint.rstrip("/").removesuffix("/v1") + "/v1"
        self.model = model
        self.max_tokens = max_tokens
        self._headers = {"authorization": f"Bearer {api_key}"}
        self._timeout_s = timeout_s
        self._structured = True

    def open(self) -> httpx.Client:
        """An HTTP client for a batch of requests (thread-safe; close it after the batch)."""
        return httpx.Client(base_url=self.base_url, headers=self._headers, timeout=self._timeout_s)

    def model_name(self, http: httpx.Client) -> str:
        """The configured model, else the first id the endpoint lists under ``/v1/models``."""
        if self.model is None:
            body = self._json(lambda: http.get("/models"))
            try:
                self.model = str(body["data"][0]["id"])
            except (KeyError, IndexError, TypeError):
                raise JudgeUnavailable(f"{masked_url(self.base_url)}/models lists no model") from None
        return self.model

    def complete(self, http: httpx.Client, messages: list[dict[str, str]]) -> tuple[str, str | None]:
        """The text of the judge's reply to ``messages`` and why it ended (``stop``, ``length``...)."""
        payload: dict[str, Any] = {
            "model": self.model_name(http),
            "messages": messages,
            "temperature": 0,
            "max_tokens": self.max_tokens,
        }
        if self._structured:
            schema = {"name": "verdict", "schema": VERDICT_SCHEMA, "strict": True}
            structured = {**payload, "response_format": {"type": "json_schema", "json_schema": schema}}
            response = self._post(http, structured)
            if response.status_code not in {400, 422}:
                return self._content(response)
            self._structured = False  # this endpoint does not do structured output: ask in plain text
        return self._content(self._post(http, payload))

    def _post(self, http: httpx.Client, payload: dict[str, Any]) -> httpx.Response:
        try:
            return http.post("/chat/completions", json=payload)
        except httpx.HTTPError as error:
            raise JudgeUnavailable(f"judge request failed: {_first_line(error)}") from None

    def _content(self, response: httpx.Response) -> tuple[str, str | None]:
        body = self._json(lambda: response)
        try:
            choice = body["choices"][0]
            content = choice["message"]["content"]
        except (KeyError, IndexError, TypeError):
            raise JudgeUnavailable("judge reply has no message content") from None
        if not isinstance(content, str):
            raise JudgeUnavailable("judge reply has no message content")
        finish = choice.get("finish_reason")
        return content, finish if isinstance(finish, str) else None

    def _json(self, send: Any) -> Any:
        try:
            response = send()
        except httpx.HTTPError as error:
            raise JudgeUnavailable(
                f"judge endpoint unreachable at {masked_url(self.base_url)}: {_first_line(error)}"
            ) from None
        if response.status_code != 200:
            raise JudgeUnavailable(
                f"judge endpoint answered HTTP {response.status_code}: {masked_excerpt(response.text, 120)}"
            )
        try:
            return response.json()
        except ValueError:
            raise JudgeUnavailable("judge endpoint did not answer JSON") from None


def _first_line(error: Exception) -> str:
    lines = str(error).strip().splitlines()
    # httpx quotes what it could not parse (a header line, a URL): it may hold a credential
    return mask_credentials(lines[0]) if lines else type(error).__name__
