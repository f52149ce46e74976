"""An LLM judge for accuracy on any OpenAI-compatible server, through ragas' ``llm_factory``."""

from typing import Any

from pydantic import BaseModel, Field

from evals.errors import EndpointUnreachable

PROMPT = """You grade answers of a customer-support assistant.
Question: {question}
Reference answer: {reference}
Assistant answer: {answer}
Is the assistant answer correct and consistent with the reference answer (it may be shorter or worded
differently, but must not contradict it or leave out what the question asks)? Reply in JSON."""


class JudgeVerdict(BaseModel):
    """The judge's structured reply."""

    correct: bool = Field(description="true when the answer is correct")
    reason: str = Field(description="one short sentence")


class RagasJudge:
    """Asks a judge model, via ragas' instructor-backed LLM, whether an answer is correct."""

    def __init__(self, endpoint: str, model: str, api_key: str = "none") -> None:
        from openai import OpenAI
        from ragas.llms import llm_factory

        from evals.runner.target import base_url

        client = OpenAI(base_url=f"{base_url(endpoint)}/v1", api_key=api_key)
        self._llm: Any = llm_factory(model, provider="openai", client=client)

    def is_correct(self, question: str, reference: str, answer: str) -> tuple[bool, str]:
        """The verdict and its reason; an unreachable judge is an error, not a silent pass."""
        prompt = PROMPT.format(question=question, reference=reference, answer=answer)
        try:
            verdict = self._llm.generate(prompt, JudgeVerdict)
        except Exception as error:  # the judge's client raises many kinds; all mean no verdict
            raise EndpointUnreachable(f"the accuracy judge failed: {str(error).splitlines()[0]}") from None
        return bool(verdict.correct), str(verdict.reason)
