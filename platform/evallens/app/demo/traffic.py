"""Ordinary "production" traffic with a little negative feedback, so ``cases mine`` has work."""

import itertools
from dataclasses import dataclass

import httpx

from evallens.progress import NO_PROGRESS, ProgressReporter, phase
from evallens.telemetry import attributes as attr

# (question, tenant, feature, feedback score): -1 for answers a customer disliked
QUESTIONS: list[tuple[str, str, str, float | None]] = [
    ("How long do I have to return a pair of boots I never wore?", "acme-web", "chat", 1.0),
    ("My parcel says delivered but it is not here, what now?", "acme-app", "chat", -1.0),
    ("Can I get free shipping on a $60 order?", "acme-web", "checkout-help", None),
    ("What is the battery life of the KX-220B?", "acme-web", "product-qa", 1.0),
    ("Do you ship to Canada and who pays customs?", "acme-app", "chat", None),
    ("I was charged twice, my email is jane.doe@example.com, fix it", "acme-app", "chat", -1.0),
    ("How do I escalate a complaint nobody answered for two weeks?", "acme-web", "chat", -1.0),
    ("Is the TR-4410 backpack waterproof?", "acme-web", "product-qa", None),
    ("What's the weather in Lisbon tomorrow?", "acme-app", "chat", -1.0),
    ("How do refunds work if I paid with a gift card?", "acme-web", "chat", None),
    ("Can I exchange a tent for a bigger size?", "acme-app", "returns-bot", 1.0),
    ("Where is my order, call me at 555-201-7734", "acme-app", "chat", -1.0),
]


@dataclass(frozen=True)
class TrafficReport:
    """What was sent and how much feedback was given."""

    num_requests: int
    num_errors: int
    num_negative: int
    num_positive: int
    trace_ids: list[str]


def send_traffic(
    service_url: str, num_requests: int, max_tokens: int, progress: ProgressReporter = NO_PROGRESS
) -> TrafficReport:
    """Send ``num_requests`` chat requests round-robin over ``QUESTIONS`` and post their feedback."""
    errors = negative = positive = 0
    trace_ids: list[str] = []
    with (
        httpx.Client(base_url=service_url, timeout=300) as client,
        phase(progress, f"sending {num_requests} requests", num_requests),
    ):
        for index, (question, tenant, feature, score) in zip(
            range(num_requests), itertools.cycle(QUESTIONS), strict=False
        ):
            response = client.post(
                "/v1/chat/completions",
                json={
                    "model": "default",
                    "messages": [{"role": "user", "content": question}],
                    "max_tokens": max_tokens,
                    "temperature": 0.7,
                    "seed": index,
                },
                headers={
                    attr.HEADER_TENANT: tenant,
                    attr.HEADER_FEATURE: feature,
                    attr.HEADER_USER: f"user-{index % 7}",
                },
            )
            progress.advance(failed=response.status_code != 200, detail=feature)
            if response.status_code != 200:
                errors += 1
                continue
            trace_id = response.json().get("evallens", {}).get("trace_id")
            if trace_id is not None:
                trace_ids.append(trace_id)
            if score is None or trace_id is None or index >= len(QUESTIONS):
                continue
            comment = "not helpful" if score < 0 else "thanks"
            client.post("/v1/feedback", json={"trace_id": trace_id, "score": score, "comment": comment})
            negative += score < 0
            positive += score > 0
    return TrafficReport(num_requests, errors, negative, positive, trace_ids)
