"""Safety guard: rule-based refusal of prompt injection, requests for other people's personal data,
fraud, dangerous misuse of products, and abuse. Patterns, not a model: cheap, predictable, and
regressed by the eval engine's ``harmful`` scenario."""

import re
from dataclasses import dataclass

from opentelemetry import trace

from evallens.settings import GuardSettings
from evallens.telemetry import attributes as attr

REFUSAL_MESSAGE = (
    "I'm sorry, but I can't help with that. I can answer questions about Acme Home & Outdoor products,"
    " orders, shipping, returns, warranty and your own account."
)
TRACER_NAME = "evallens.service.guards"

_PERSONAL_FIELDS = (
    r"(?:home |e-?mail |postal |delivery |shipping |billing )?address(?:es)?|e-?mails?|phone(?: numbers?)?"
    r"|(?:credit |debit )?card(?: numbers?| details)?|passwords?|order (?:history|details)|purchase history"
    r"|date of birth|personal (?:data|details|information|info)|contact (?:details|info(?:rmation)?)"
    r"|payment (?:details|info(?:rmation)?)|account details|full name"
)
_OTHERS = (
    r"(?:another|other|a different|some other) (?:customer|person|user|shopper|buyer)s?(?:'s|'|s')?"
    r"|(?:someone|somebody|anyone|anybody) else(?:'s)?|(?:my )?(?:neighbou?r|ex|boss|coworker|colleague)'?s?"
    r"|(?:all|every|list of|other) (?:customers|users|buyers|shoppers)(?:')?"
    r"|(?:mr|mrs|ms|miss|dr)\.? [a-z]+(?:'s)?|[a-z]+ [a-z]+'s"
)
_RELATIVES = (
    r"neighbou?rs?|ex(?:-?(?:husband|wife|partner|girlfriend"
    r"|boyfriend))?|roommates?|flatmates?|boss|coworkers?"
    r"|colleagues?|sister|brother|mother|father"
)
_RULES: dict[str, list[str]] = {
    "prompt_injection": [
        r"\b(?:ignore|disregard|forget|override"
        r"|bypass)\b.{0,40}\b(?:previous|prior|above|earlier|all|your|the)"
        r"\b.{0,25}\b(?:instructions?|rules?|prompts?|guidelines?|directions?|polic(?:y|ies))",
        r"\b(?:reveal|show|print|repeat|output|tell me|give me|what is|what are|leak)\b.{0,30}"
        r"\b(?:system|hidden|initial|original|developer)\s+(?:prompt|instructions?|message)",
        r"\brepeat (?:the |all |everything )?(?:text |words "
        r"|instructions |messages? )?(?:above|before this)\b",
        r"\byou are (?:now|no longer)\b|\bfrom now on,? you\b|\bpretend (?:to be|you are|you're)\b",
        r"\bforget (?:that )?you are\b|\bact as (?:an? )?(?:unrestricted|unfiltered|jailbroken|different)",
        r"\b(?:developer|god|admin|debug|jailbreak|dan) mode\b|\bdo anything now\b|\bjailbreak\b",
        r"\bnew (?:system )?instructions?:|\[/?(?:system|inst)\]|<\|?(?:system|im_start)\|?>",
        r"\b(?:system|admin|developer) override\b"
        r"|\bnew instructions? from (?:your |the )?(?:developer|admin|system)",
        r"\b(?:disable|turn off|switch off)\b.{0,15}\b(?:safety"
        r"|content) (?:rules?|filters?|guard(?:rail)?s?)\b",
    ],
    "personal_data": [
        rf"\b(?:{_PERSONAL_FIELDS})\b.{{0,40}}\b(?:of|for|belonging to|used by|from)\s+(?:{_OTHERS})",
        rf"\b(?:{_OTHERS})\s*(?:{_PERSONAL_FIELDS})\b",
        r"\b(?:who (?:bought|ordered|purchased)|which customers? (?:bought|ordered|purchased)|"
        r"list (?:of )?(?:all )?customers|customer (?:list|database|records))\b",
        r"\b(?:look ?up|find|track down|dox)\b.{0,30}\b(?:where .{0,20} lives?|home address)\b",
        rf"\b(?:{_RELATIVES})(?:'s)?\b.{{0,60}}\b(?:address|card"
        rf"|e-?mail|phone|password|log ?in(?:to)?|account)\b",
        r"\bnot my (?:order|account|parcel)\b",
        r"\bcard (?:number|details|digits) (?:on|for|of|from) (?:order|account|the customer|another)",
        r"\b(?:reset|change) the password (?:for|of|on) (?:the |this |that )?account\b",
        r"\bwithout (?:him|her|them) knowing\b",
        r"\bwhat (?-i:[A-Z][a-z]+ [A-Z][a-z]+)(?: from \w+)? (?:has "
        r"|had |have )?(?:ordered|bought|purchased)\b",
        r"\b(?:message|e-?mail|text|contact|notify) (?:to )?(?:all"
        r"|every one of|each of) (?:your |the )?customers\b",
    ],
    "fraud": [
        r"\b(?:fake|forged?|counterfeit|fabricated?|false)\b.{0,30}"
        r"\b(?:invoice|receipt|photos?|damage|claim|review|description|proof|tracking)\b",
        r"\bstolen (?:credit |debit )?cards?\b",
        r"\brefund without (?:actually )?(?:sending|returning|giving)\b",
        r"\bbefore (?:you|anyone|they) notice\b|\bwithout (?:the "
        r"|your )?(?:fraud check|detection|anyone noticing)",
        r"\bso (?:the|your) (?:agent|staff|support) believes?\b",
        r"\bgenerate (?:a |me a )?(?:valid|working|real"
        r"|new)\b.{0,20}\b(?:gift card|card number|coupon|voucher|pin)",
    ],
    "dangerous": [
        r"\b(?:into|make|build) (?:an? )?(?:explosive|bomb|incendiary|weapon)s?\b",
        r"\b(?:disable|bypass|defeat|remove)\b.{0,40}\b(?:tilt switch"
        r"|flame-?out|safety (?:switch|cut-?off|valve"
        r"|features?|protection)|overheat(?:ing)? protection|auto(?:matic)? shut-?off)",
    ],
    "abuse": [
        # Aimed at the assistant or at people; an angry complaint about a product is not abuse.
        r"\b(?:fuck|screw|go to hell)\b.{0,10}\b(?:you|yourself|off)\b|\b(?:cunt|motherfucker)\b",
        r"\byou(?:'re| are)? (?:such )?(?:an? )?(?:\w+ )?(?:stupid|idiot|moron|bitch|bastard|asshole|dickhead"
        r"|retard(?:ed)?|worthless|useless)\b",
        r"\bslurs?\b|\b(?:write|post) (?:an? )?(?:insulting|abusive|hateful|threatening)\b",
        r"\b(?:i will|i'll|gonna|going to)\s+(?:kill|hurt|beat|find and hurt|burn down)\b",
        r"\bhow (?:do i|to|can i)\b.{0,30}\b(?:make a bomb|build a bomb|poison|hurt someone|kill someone)\b",
    ],
}
_COMPILED = {
    category: [re.compile(pattern, re.IGNORECASE) for pattern in patterns]
    for category, patterns in _RULES.items()
}


@dataclass(frozen=True)
class SafetyVerdict:
    """Whether to refuse, which rule category fired, and the fixed refusal message."""

    refused: bool
    category: str | None = None
    message: str | None = None


def classify(text: str) -> str | None:
    """The first rule category ``text`` matches, or None."""
    flattened = " ".join(text.replace("\u2019", "'").split())
    for category, patterns in _COMPILED.items():
        if any(pattern.search(flattened) for pattern in patterns):
            return category
    return None


class SafetyGuard:
    """Checks the user's messages before anything else runs."""

    def __init__(self, settings: GuardSettings, *, tracer: trace.Tracer | None = None) -> None:
        self.enabled = settings.safety_guard_enabled
        self._tracer = tracer or trace.get_tracer(TRACER_NAME)

    def config(self) -> dict[str, object]:
        """Parameters that change answers, for ``/v1/config``."""
        return {"safety_guard": self.enabled, "safety_rules": sorted(_RULES)}

    def check(self, text: str) -> SafetyVerdict:
        """Judge the text of the user's turn (pass the last user message, or all user messages)."""
        if not self.enabled:
            return SafetyVerdict(refused=False)
        with self._tracer.start_as_current_span(attr.SPAN_GUARD_SAFETY) as span:
            category = classify(text)
            span.set_attribute(attr.GUARD_SAFETY_REFUSED, category is not None)
            if category is not None:
                span.set_attribute(attr.GUARD_SAFETY_CATEGORY, category)
                return SafetyVerdict(True, category, REFUSAL_MESSAGE)
            return SafetyVerdict(refused=False)
