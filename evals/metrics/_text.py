"""Text normalisation shared by the metrics: one canonical spelling for what people write many ways.

``normalise`` turns "Five to seven business days", "5–7 biz days" and "5 to 7 working days" into the
same tokens, "$14.95" / "14.95 dollars" / "USD 14.95" into ``14.95 usd`` (also "six dollars and
ninety-nine cents" into ``6.99 usd``, "a fifty-euro voucher" into ``50 eur``, "12 quid" and "twenty
pounds a month" into gbp), "$38 a month" into ``38 usd per month``, "15 percent" into ``15 percent``,
"2pm" into ``14:00``, "Sat 9-1" into ``saturday 9-1``, "two-year" into ``2 year``, "two more years"
into ``2 year``, "the last week" into ``1 week``, "the next working day" into ``1 business day``,
"under-14s" into ``under 14``, an opening "Yep", "Sure" or "Of course" into ``yes`` and "can’t" into
``can not``; also "€29,99" into ``29.99 eur``, "twenty-six pounds eighty" into ``26.8 gbp``, "20 cents"
beside "€1" into ``0.2 eur``, "£25/seat" into ``25 gbp per seat``, "parent/guardian" into two words,
"70, 80 or 90 percent" into ``70 percent, 80 percent or 90 percent``, "a full hour" into ``1 hour``, and
a numbered list's "1." markers into nothing; "five–ten" into ``5-10``, "£12pp" into ``12 gbp pp``,
"24-bit/192 kHz" into two values, "aged 2–11" into ``aged 2-11 year``, and a line break into ``;``
(a list item ends there); "2–4 pm" and "between 10 and 11 in the morning" into ``14:00 to 16:00`` and
``10:00 to 11:00`` (a meridiem after a range is both ends'), "9–3:30" into ``9:00 to 3:30``, "900Mbps"
into ``900 mbps`` and "costs you nothing" into ``free``. ``stem`` reads "lapses" as "lapse" and "bought"
as "buy".
"""

import re
import unicodedata
from functools import lru_cache

_QUOTES = str.maketrans({"‘": "'", "’": "'", "‚": "'", "‛": "'", "′": "'", "`": "'", "“": '"', "”": '"'})
_HYPHENS = re.compile(r"[\u2010\u2011]")
_DASHES = re.compile(r"[\u2012\u2013\u2014\u2015\u2212]")

_CONTRACTIONS = [
    (r"\bcan'?t\b", "can not"),
    (r"\bcannot\b", "can not"),
    (r"\bwon'?t\b", "will not"),
    (r"\bshan'?t\b", "shall not"),
    (r"\bain'?t\b", "is not"),
    (r"\b(do|does|did|is|are|was|were|has|have|had|would|could|should|must|need|might)n'?t\b", r"\1 not"),
    (r"\bi'?m\b", "i am"),
    (r"\b(i|you|we|they|he|she|it|that)'ll\b", r"\1 will"),
    (r"\b(i|you|we|they)'ve\b", r"\1 have"),
    (r"\bive\b", "i have"),
    (r"\b(i|you|we|they|he|she|it|that)'d\b", r"\1 would"),
    (r"\b(you|we|they)'re\b", r"\1 are"),
    (r"\byoure\b", "you are"),
    (r"\b(it|that|there|what|here|who|he|she)'s\b", r"\1 is"),
    (r"\b(it|that|there|what)s\b(?= (?:not|a|an|the|\d))", r"\1 is"),
]
_CONTRACTION_RES = [(re.compile(pattern), repl) for pattern, repl in _CONTRACTIONS]

_ONES = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
    "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15,
    "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19,
}  # fmt: skip
_TENS = {
    "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80,
    "ninety": 90,
}  # fmt: skip
_SCALES = {"hundred": 100, "thousand": 1000, "million": 1_000_000}
_NUMBER_WORD = "|".join([*_ONES, *_TENS, *_SCALES, "a", "an", "and"])
# a dash with no space between two number words: a range ("five–ten"), not a break in the sentence
_SMALL_NUMBER = "|".join([*_ONES, *_TENS])
_WORD_RANGE = re.compile(rf"\b({_SMALL_NUMBER})[\u2012\u2013\u2014](?=(?:{_SMALL_NUMBER})\b)", re.I)
_AGE = re.compile(r"\b(aged?|ages) (\d+(?:-\d+)?)(?![\d.-])(?! ?(?:year|month|week|day|\+))")
_NUMBER_RUN = re.compile(
    rf"\b(?:{_SMALL_NUMBER}|a hundred|a thousand)\b(?:[ -](?:{_NUMBER_WORD})\b)*",
)

_PER_UNITS = r"hr|h|hour|day|d|wk|week|mo|month|yr|year|night|person|item|order|unit|kg|lb"
_PER_NAMES = {"hr": "hour", "h": "hour", "d": "day", "wk": "week", "mo": "month", "yr": "year"}  # "BTU/hr"
_TIME_UNITS = r"second|minute|hour|day|business day|week|month|year"
# units "a" or "an" counts as one of: "under a kilo", "a pound heavier"
_COUNTED_UNITS = r"kilo|kilogram|kg|pound|lb|liter|litre|gram|watt|inch|dollar|buck|percent"
_UNIT_ALIASES = [
    (r"(?:business|working|biz|work) ?days?", "business day"),
    (r"mbps|mbit/s|mb/s|megabits? per second", "mbps"),
    (r"gbps|gbit/s|gb/s|gigabits? per second", "gbps"),
    (r"kbps|kbit/s|kilobits? per second", "kbps"),
    (r"kb|kilobytes?", "kb"),
    (r"mb|megabytes?", "mb"),
    (r"gb|gigabytes?|gigs?", "gb"),
    (r"tb|terabytes?", "tb"),
    (r"kwh|kilowatt[ -]?hours?", "kwh"),
    (r"kw|kilowatts?", "kw"),
    (r"ghz|gigahertz", "ghz"),
    (r"mhz|megahertz", "mhz"),
    (r"khz|kilohertz", "khz"),
    (r"hrs?|hours?", "hour"),
    (r"mins?|minutes?", "minute"),
    (r"secs?|seconds?", "second"),
    (r"days?", "day"),
    (r"wks?|weeks?", "week"),
    (r"mos|months?", "month"),
    (r"yrs?|years?", "year"),
    (r"lbs?|pounds?", "lb"),
    (r"kgs?|kilos?|kilograms?", "kg"),
    (r"grams?|g", "g"),
    (r"l|ltrs?|liters?|litres?", "liter"),
    (r"ml|millilit(?:er|re)s?", "ml"),
    (r"mg|milligrams?", "mg"),
    (r"wh|watt[ -]?hours?", "wh"),
    (r"w|watts?", "w"),
    (r"mah", "mah"),
    (r"lm|lumens?", "lumen"),
    (r"points?", "point"),
    (r"cms?|centimet(?:er|re)s?", "cm"),
    (r"mm|millimet(?:er|re)s?", "mm"),
    (r"m|met(?:er|re)s?", "meter"),
    (r"km|kilomet(?:er|re)s?", "km"),
    (r"inch(?:es)?", "inch"),
    (r"ft|foot|feet", "foot"),
    (r"mi|miles?", "mile"),
    (r"°c|° c|degrees? c(?:elsius)?|celsius|centigrade", "celsius"),
    (r"°f|° f|degrees? f(?:ahrenheit)?|fahrenheit", "fahrenheit"),
    (r"degrees?", "degree"),
]
_NUMBER = r"\d+(?:\.\d+)?(?:-\d+(?:\.\d+)?)?"
_UNIT_RES = [(re.compile(rf"(?<=\d) ?(?:{alias})\b"), f" {unit}") for alias, unit in _UNIT_ALIASES]

_FREE = re.compile(
    r"\b(?:free of charge|at no (?:extra |additional )?(?:cost|charge)|(?:for|with) no (?:cost|charge)"
    r"|no (?:extra |additional )?charge|costs? (?:you |us )?nothing|complimentary|for free|0 usd|on us"
    r"|on the house)\b"
)
_TOKEN = re.compile(r"[a-z0-9]+(?:[.:\-@'/][a-z0-9]+)*|[,;:!?()|\u2014]|\.(?=\s|$)")
BOUNDARY = "|"
_NEGATION_AUX = re.compile(
    r"\b(?:do|does|did|will|would|can|could|should|is|are|was|were|has|have|had|shall|must|may|might)"
    r" not\b"
)


@lru_cache(maxsize=8192)
def clean(text: str) -> str:
    """Unicode-normalised text with straight quotes and ASCII hyphens (case and wording kept)."""
    text = unicodedata.normalize("NFKC", text).translate(_QUOTES)
    text = _HYPHENS.sub("-", text)
    # "£500–£10,000", "5 – 7 days"; a spaced em dash breaks the sentence: "£45 — 60 minutes on a route"
    text = re.sub(r"(?<=\d)(?:\s*[\u2012\u2013\u2212]\s*|[\u2014\u2015])(?=[$£€]?\d)", "-", text)
    text = re.sub(r"(?:(?<=[ap]m)|(?<=\.m\.))\s*[\u2012\u2013\u2014\u2015]\s*(?=\d)", "-", text)  # "9am–5pm"
    text = re.sub(r"(?<![\w.])\u2212(?=\d)", "-", text)  # a minus sign: "−7 °C"
    text = _WORD_RANGE.sub(r"\1-", text)  # "five–ten working days" is "five-ten"
    return _DASHES.sub(" — ", text)


@lru_cache(maxsize=8192)
def expand_contractions(text: str) -> str:
    """Lower-case ``text`` with contractions spelled out ("can’t" -> "can not", "I'll" -> "i will")."""
    lowered = clean(text).lower()
    for pattern, repl in _CONTRACTION_RES:
        lowered = pattern.sub(repl, lowered)
    return lowered


_DAYS = {
    "mon": "monday", "tue": "tuesday", "tues": "tuesday", "wed": "wednesday", "thu": "thursday",
    "thur": "thursday", "thurs": "thursday", "fri": "friday", "sat": "saturday", "sun": "sunday",
}  # fmt: skip
_DAY = "|".join(_DAYS)
# "Sat 9:00-13:00", "Mon-Fri": a short day name only where hours or another day follow ("we sat down" stays)
_DAY_ABBREVIATION = re.compile(rf"\b({_DAY})\b\.?(?=:? ?\d|(?: ?(?:-|—|to|/|&|and|,) ?)(?:{_DAY})\b)")
_DAY_AFTER_DAY = re.compile(rf"(?<=day)( ?(?:-|—|to|/|&|and|,) ?)({_DAY})\b\.?")
_MORE_OF = re.compile(r"(?<=\d) (?:more|extra|additional|further) (?=(?:year|month|week|day|hour)s?\b)")


_LIST_MARKER = re.compile(r"(?m)^\s*\d{1,2}[.)]\s+")


@lru_cache(maxsize=8192)
def normalise(text: str) -> str:
    """The canonical form used to compare facts, references and answers (see the module docstring)."""
    text = expand_contractions(text)
    text = _LIST_MARKER.sub("", text)  # "1. **0% interest** ...": a numbered list's markers are no values
    text = re.sub(r"(?<![.;:,!?])[ \t]*\n\s*(?=\S)", "; ", text)  # a line ends what it says ("- Devices: 5")
    # "€29,99", "29,99 €": a decimal comma beside a currency
    text = re.sub(r"(?<=[€£$])(\s?\d+),(\d{2})(?!\d)", r"\1.\2", text)
    text = re.sub(r"\b(\d+),(\d{2})(?= ?(?:€|eur\b|euros?\b))", r"\1.\2", text)
    text = re.sub(r"(?<=\d),(?=\d{3}(?!\d))", "", text)
    text = re.sub(r"\b(\d+(?:\.\d+)?)k\b", lambda m: f"{float(m.group(1)) * 1000:g}", text)  # "46k"
    text = re.sub(rf"(?<=[a-z0-9])/({_PER_UNITS})\b", lambda m: f" per {_PER_NAMES.get(m[1], m[1])}", text)
    text = re.sub(r"(?<=\d)pp\b", " pp", text)  # "£12pp" is £12 per person
    text = _number_words(text)
    text = re.sub(r"(?<!\d )(?<![\w.-])-(?=\d)", "minus ", text)  # "-7" and "minus seven" read the same
    text = _fractions(text)
    text = _money(text)
    text = re.sub(r"(?<=\d (?:usd|eur|gbp))/(?=[a-z])", " per ", text)  # "39 EUR/seat" is per seat
    text = re.sub(r"(?<=[a-z]{3})/(?=[a-z]{3})", " / ", text)  # "parent/guardian" is two words
    text = re.sub(r"(?<=[a-z])/(?=\d)", " / ", text)  # "24-bit/192 kHz": two values
    text = re.sub(r"(\d+(?:\.\d+)?) ?(?:%|percent\b|per cent\b|pct\b)", r"\1 percent", text)
    text = _clock_times(text)
    text = _DAY_ABBREVIATION.sub(lambda m: _DAYS[m[1]], text)
    text = _DAY_AFTER_DAY.sub(lambda m: m[1] + _DAYS[m[2]], text)
    text = _ranges(text)
    text = _AGE.sub(r"\1 \2 year", text)  # "children aged 2-11": an age is a number of years
    text = re.sub(r"(?<=\d)-(?=[a-z])", " ", text)  # "5-year" -> "5 year"
    # "under-14s" are the under 14 (a decade, "the 1990s", keeps its four digits)
    text = re.sub(r"\b(under|over)-(?=\d)", r"\1 ", text)
    text = re.sub(r"(?<![\w.])(\d{1,2})s\b", r"\1", text)
    text = re.sub(r"(?<=[a-z])-(?=[a-z])", " ", text)  # "interest-free" -> "interest free"
    text = _MORE_OF.sub(" ", text)  # "two more years" of cover is two years of it
    for pattern, unit in _UNIT_RES:
        text = pattern.sub(unit, text)
    text = _LISTED_UNIT.sub(_share_unit, text)
    text = re.sub(r"(\d+)\.(\d*?)0+\b", lambda m: m.group(1) + ("." + m.group(2) if m.group(2) else ""), text)
    text = _FREE.sub("free", text)
    # an informal yes opening the answer
    text = re.sub(r"^(\W*)(?:yep|yeah|yup|sure|absolutely|certainly|definitely|of course)\b", r"\1yes", text)
    text = re.sub(r"^(\W*)(?:nope|nah)\b", r"\1no", text)  # and an informal no
    return " ".join(text.split())


# "70, 80 or 90 percent", "3, 6 or 12 months": every number of the list takes the unit after the last
_SHARED_UNITS = r"percent|usd|eur|gbp|business day|day|week|month|year|hour|minute"
_LISTED_UNIT = re.compile(
    rf"(?<![\d.,$])\d+(?:\.\d+)?(?:, \d+(?:\.\d+)?)*,? (?:or|and) \d+(?:\.\d+)? (?:{_SHARED_UNITS})\b"
)


def _share_unit(match: re.Match[str]) -> str:
    unit = re.search(rf"(?:{_SHARED_UNITS})$", match[0])
    assert unit is not None
    return re.sub(r"\d+(?:\.\d+)?(?=,|,? (?:or|and) )", lambda number: f"{number[0]} {unit[0]}", match[0])


_WORD = re.compile(r"[a-z0-9']+")
_SPAN = 4  # words: "I'm a human." said twice repeats four 4-grams


def repetition(text: str) -> float:
    """The share of the answer's word 4-grams that repeat an earlier one: about 0 for written prose, toward
    1 for a model stuck in a loop ("I'm a human. I'm a human. ...", "No, no, no, ..."); 0 below 8 4-grams."""
    words = _WORD.findall(clean(text).lower())
    spans = [tuple(words[i : i + _SPAN]) for i in range(len(words) - _SPAN + 1)]
    return 0.0 if len(spans) < 8 else 1 - len(set(spans)) / len(spans)


def tokens(text: str) -> list[str]:
    """Word, number, range, time and code tokens of normalised text; punctuation becomes ``BOUNDARY``."""
    return [token if token[0].isalnum() else BOUNDARY for token in _TOKEN.findall(text)]


def match_tokens(text: str) -> list[str]:
    """Tokens for fact matching: normalised, light plural stemming, every negation spelled ``not``."""
    return list(_match_tokens(text))


@lru_cache(maxsize=8192)
def _match_tokens(text: str) -> tuple[str, ...]:
    canonical = _NEGATION_AUX.sub("not", normalise(text))
    canonical = re.sub(r"\b(?:never|no longer)\b|\bnon (?=[a-z]{4,})", "not ", canonical)
    return tuple(stem(token) for token in tokens(canonical))


# past forms that no suffix rule finds: "extra packs can't be bought" denies "you can buy a pack"
_IRREGULAR = {
    "bought": "buy", "paid": "pay", "sent": "send", "kept": "keep", "gave": "give", "given": "give",
    "took": "take", "taken": "take", "sold": "sell", "held": "hold", "told": "tell", "brought": "bring",
    "chose": "choose", "chosen": "choose", "wrote": "write", "written": "write", "spent": "spend",
    "lost": "lose", "stole": "steal", "stolen": "steal", "broke": "break", "broken": "break",
    "shown": "show", "froze": "freeze", "frozen": "freeze", "made": "make",
}  # fmt: skip
_US_PLURALS = frozenset(["bonuses", "buses", "viruses", "statuses", "campuses", "surpluses"])


def stem(token: str) -> str:
    """A light stem: "cards" -> "card", "boxes" -> "box", "returned" / "returnable" -> "return"."""
    if token in _IRREGULAR:
        return _IRREGULAR[token]
    if len(token) <= 3 or not token.isalpha():
        return token
    for suffix in ("able", "ible", "ed"):
        if token.endswith(suffix) and len(token) - len(suffix) >= 4:
            return token[: -len(suffix)]
    if token.endswith("ies"):
        return token[:-3] + "y"
    # "boxes", "classes", "bonuses" lose "es"; "purchases", "lapses", "licenses" only "s" ("purchase")
    if token.endswith(("sses", "xes", "ches", "shes")) or token in _US_PLURALS:
        return token[:-2]
    if token.endswith("s") and not token.endswith(("ss", "us", "is")):
        return token[:-1]
    return token


def _number_words(text: str) -> str:
    text = re.sub(r"\ba couple(?: of)?\b", "2", text)
    text = re.sub(r"\ba dozen\b", "12", text)
    text = _NUMBER_RUN.sub(lambda match: _spell_out(match.group(0)), text)
    # "$38 a month", "six pounds a day" are rates ("per month"), not "38 usd 1 month"
    text = re.sub(rf"(\d(?: ?[a-z]+)? )an? (?=(?:{_TIME_UNITS}|night)\b)", r"\1per ", text)
    # "the next working day" is one working day away; "next week" is a date, not a week long
    text = re.sub(r"\b(?:the )?(?:next|following) (?=(?:working|business|biz|work) days?\b)", "1 ", text)
    return re.sub(
        rf"\b(?:a|an|one|the (?:first|1st|last|past|next))(?: full| whole)?"  # "a full hour"
        rf" (?=(?:{_TIME_UNITS}|{_COUNTED_UNITS})\b)",
        "1 ",
        text,
    )


def _spell_out(phrase: str) -> str:
    """ "two hundred and fifty" -> "250"; words after the number ends ("five and six") are given back."""
    words = re.split(r"([ -])", phrase)[::2]
    total, current, used, last = 0, 0, 0, ""
    for index, word in enumerate(words):
        following = words[index + 1] if index + 1 < len(words) else ""
        if word in {"a", "an"} and index == 0 and following in _SCALES:
            current = 1
        elif word == "and" and last == "scale" and (following in _ONES or following in _TENS):
            pass
        elif word in _TENS and last in {"", "scale", "and"}:
            current += _TENS[word]
            last = "tens"
        elif word in _ONES and last in {"", "scale", "tens", "and"}:
            current += _ONES[word]
            last = "ones"
        elif word in _SCALES and last in {"ones", "tens", ""} and (current or index > 0):
            current = max(current, 1) * _SCALES[word]
            if _SCALES[word] >= 1000:
                total, current = total + current, 0
            last = "scale"
        else:
            break
        last = "and" if word == "and" else last
        used = index + 1
    while used and words[used - 1] in {"a", "an", "and"}:
        used -= 1
    if used == 0:
        return phrase
    consumed = len(" ".join(words[:used]))
    rest = _NUMBER_RUN.sub(lambda match: _spell_out(match.group(0)), phrase[consumed:])
    return f"{total + current}{rest}"


def _fractions(text: str) -> str:
    text = re.sub(rf"\bhalf (?:an?|1) ({_TIME_UNITS})\b", r"0.5 \1", text)
    text = re.sub(rf"\bhalf[- ]({_TIME_UNITS})\b", r"0.5 \1", text)  # "an extra half hour", "a half-day"
    text = re.sub(
        rf"\b(\d+) ({_TIME_UNITS})s? and a half\b", lambda m: f"{int(m.group(1)) + 0.5} {m.group(2)}", text
    )
    return re.sub(
        rf"\b(\d+) and a half ({_TIME_UNITS})", lambda m: f"{int(m.group(1)) + 0.5} {m.group(2)}", text
    )


def _money(text: str) -> str:
    amount = r"(\d+(?:\.\d+)?)"
    # "seven dollars fifty" is 7.50 dollars
    text = re.sub(
        r"\b(\d+) (dollars?|euros?|bucks) (?:and )?(\d{2})\b(?! ?(?:cents?|percent)\b)", r"\1.\3 \2", text
    )
    # "plus $5" is not "pl" and "US$5"
    text = re.sub(rf"(?:\bus ?\$|\$) ?{amount}", r"\1 usd", text)
    text = re.sub(rf"\b(?:usd|us dollars?) ?{amount}", r"\1 usd", text)
    text = re.sub(rf"{amount}[ -]?(?:usd|us dollars?|dollars?|bucks)\b", r"\1 usd", text)
    text = re.sub(
        rf"(?:€|\beur ){amount}|{amount}[ -]?(?:€|eur\b|euros?\b)",
        lambda m: f"{m.group(1) or m.group(2)} eur",
        text,
    )
    # "twenty pounds a month" is a price: pounds in weight are not paid per month
    text = re.sub(rf"{amount} pounds? (?=per (?:day|week|month|year)\b)", r"\1 gbp ", text)
    text = re.sub(
        rf"(?:£|\bgbp ){amount}|{amount} ?(?:gbp|quid|pounds? sterling)\b",
        lambda m: f"{m.group(1) or m.group(2)} gbp",
        text,
    )
    # "six dollars and ninety-nine cents" is 6.99 usd; "twenty-six pounds eighty" is 26.80 gbp
    text = re.sub(
        r"\b(\d+) (usd|eur) and (\d{1,2}) cents?\b", lambda m: f"{m[1]}.{int(m[3]):02d} {m[2]}", text
    )
    text = re.sub(
        r"\b(\d+) pounds? (?:and )?(\d{2})\b(?! ?(?:oz|ounces?|kg|lbs?|g|grams?|pence)\b)",
        lambda m: f"{m[1]}.{m[2]} gbp",
        text,
    )
    # cents alone are the cents of the text's one currency ("20 cents" beside "€1"), dollars' otherwise
    currency = "eur" if re.search(r"\d eur\b", text) and not re.search(r"\d usd\b", text) else "usd"
    text = re.sub(r"\b(\d{1,2}) ?(?:cents?\b|\u00a2)", lambda m: f"0.{int(m.group(1)):02d} {currency}", text)
    return re.sub(r"(\d+(?:\.\d+)?) usd usd\b", r"\1 usd", text)


def _clock_times(text: str) -> str:
    def to_24h(match: re.Match[str]) -> str:
        hour, minute = int(match.group(1)), int(match.group(2) or 0)
        if hour > 12:
            return match.group(0)
        pm = match.group(3).startswith("p")
        hour = (hour % 12) + (12 if pm else 0)
        return f"{hour}:{minute:02d}"

    daytime = {"morning": "am", "afternoon": "pm", "evening": "pm", "night": "pm"}
    text = re.sub(
        r"\b(\d{1,2}(?::\d{2})?) (?:o'clock )?(?:in the|at) (morning|afternoon|evening|night)\b",
        lambda m: f"{m.group(1)} {daytime[m.group(2)]}",
        text,
    )
    # "2-4 pm", "between 10 and 11 am": the meridiem after a range is both ends'
    text = _CLOCK_RANGE.sub(_shared_meridiem, text)
    text = re.sub(r"\b(\d{1,2})(?::(\d{2}))? ?([ap])\.?m\.?(?![a-z])", to_24h, text)
    text = re.sub(r"\bnoon\b", "12:00", text)
    text = re.sub(r"\b0(\d):(\d{2})\b", r"\1:\2", text)
    # "9-3:30": a bare hour beside a clock time is a clock time too
    text = re.sub(r"(?<![\d.:])(\d{1,2}) ?(?:-|to|until|till) ?(\d{1,2}:\d{2})\b", r"\1:00-\2", text)
    text = re.sub(r"\b(\d{1,2}:\d{2}) ?(?:-|to|until|till) ?(\d{1,2})(?![\d:.])", r"\1-\2:00", text)
    return re.sub(
        r"\b(\d{1,2}:\d{2}) ?(?:-|to|until|till|through|thru) ?(\d{1,2}:\d{2})\b", r"\1 to \2", text
    )


_CLOCK_RANGE = re.compile(
    r"\b(between )?(\d{1,2})(?::(\d{2}))? ?(-|to|until|till|and) ?"
    r"(\d{1,2})(?::(\d{2}))? ?([ap])\.?m\.?(?![a-z])"
)


def _shared_meridiem(match: re.Match[str]) -> str:
    between, start, start_minute, joint, end, end_minute, meridiem = match.groups()
    if (between is None) == (joint == "and") or int(start) > 12 or int(end) > 12:
        return match.group(0)  # "5 and 6 pm" without "between" lists two times, it sets no range
    end_hour = int(end) % 12 + (12 if meridiem == "p" else 0)
    # "9-5 pm" runs from the morning: a start after the end, on the clock face, has the other meridiem
    start_hour = int(start) % 12 + (12 if (meridiem == "p") == (int(start) % 12 <= int(end) % 12) else 0)
    return f"{start_hour}:{start_minute or '00'} to {end_hour}:{end_minute or '00'}"


def _ranges(text: str) -> str:
    number = r"(\d+(?:\.\d+)?)"
    unit = r"(?: ?(usd|eur|gbp|percent))?"
    text = re.sub(rf"\bbetween {number}{unit} and {number}\b", _join_range, text)
    return re.sub(
        rf"(?<![\d.:-]){number}{unit} ?(?:-|to|through|thru|until) ?{number}(?![\d:])", _join_range, text
    )


def _join_range(match: re.Match[str]) -> str:
    low, unit, high = match.group(1), match.group(2), match.group(3)
    return f"{low}-{high}" + (
        f" {unit}" if unit and not match.string[match.end() :].startswith(f" {unit}") else ""
    )
