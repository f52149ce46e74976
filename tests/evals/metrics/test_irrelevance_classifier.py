"""The irrelevance classifier: trained on the irrelevance labels outside the held-out part, trained by
`model pull` beside the other two, loaded by the scoring context when present and enabled, and overturning
the irrelevance rules only when very confident."""

import json
from pathlib import Path

import pytest

from evallens.settings import EvalSettings
from evals.calibrate import calibrate
from evals.calibrate.heldout import CALIBRATION_DIR, HELDOUT_METRICS, tuning_rows
from evals.calibrate.labels import load_labels
from evals.calibrate.train import Training, prepare_classifier, train_classifier
from evals.errors import EvalConfigError
from evals.metrics import irrelevance
from evals.metrics._embedding import MiniLmSimilarity
from evals.metrics._irrelevance_classifier import IrrelevanceClassifier
from evals.metrics.context import LEARNED, build_scoring_context, describe_scoring
from evals.metrics.result import Answer, ScoringContext
from evals.sets.format import CaseSpec

from .conftest import Probability, case

QUICK = Training(epochs=1, batch_size=8, max_tokens=64, seeds=(1,))


@pytest.fixture(scope="module")
def quick_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    rows = tuning_rows("irrelevance")[:16]
    folder = tmp_path_factory.mktemp("classifier") / "irrelevance-classifier"
    return train_classifier(folder, rows, QUICK, metric="irrelevance")


def test_no_held_out_irrelevance_row_is_trained_on() -> None:
    trained = {(row.id, row.response) for row in tuning_rows("irrelevance")}
    held_out = {
        (row.id, row.response)
        for name, metrics in HELDOUT_METRICS.items()
        if "irrelevance" in metrics
        for row in load_labels(CALIBRATION_DIR / name)
        if row.metric == "irrelevance"
    }
    assert len(trained) > 1500 and len(held_out) > 5000
    assert not trained & held_out
    assert all(row.metric == "irrelevance" for row in tuning_rows("irrelevance"))


def test_model_pull_trains_every_learned_classifier_one_irrelevance_member_by_default() -> None:
    assert set(LEARNED) == {"harmfulness", "accuracy", "irrelevance"}
    assert Training.of(EvalSettings(), "irrelevance").seeds == (1,)
    assert Training.of(EvalSettings(eval_irrelevance_classifier_members=2), "irrelevance").seeds == (1, 2)


def test_prepare_trains_it_where_the_settings_put_it_and_the_context_loads_it(
    tmp_path: Path, similarity: MiniLmSimilarity
) -> None:
    out = tmp_path / "irrelevance-classifier"
    settings = EvalSettings(eval_irrelevance_classifier=True, eval_irrelevance_classifier_path=out)
    rows = tuning_rows("irrelevance")[:8]
    assert prepare_classifier(settings, "irrelevance", rows=rows, training=QUICK) == (out, True)
    assert prepare_classifier(settings, "irrelevance", rows=rows, training=QUICK)[1] is False
    context = build_scoring_context(settings, similarity)
    assert isinstance(context.irrelevance_classifier, IrrelevanceClassifier)
    assert context.irrelevance_confidence == EvalSettings().eval_irrelevance_confidence
    assert str(describe_scoring(context)["irrelevance_classifier"]).startswith("manifest ")
    off = build_scoring_context(
        settings.model_copy(update={"eval_irrelevance_classifier": False}), similarity
    )
    assert off.irrelevance_classifier is None and describe_scoring(off)["irrelevance_classifier"] is None


def test_a_damaged_irrelevance_classifier_is_named_with_its_own_setting(
    quick_model: Path, tmp_path: Path, similarity: MiniLmSimilarity
) -> None:
    folder = tmp_path / "damaged"
    folder.mkdir()
    (folder / "seed-1").mkdir()
    for path in quick_model.rglob("*"):
        if path.is_file():
            (folder / path.relative_to(quick_model)).write_bytes(path.read_bytes())
    weights = folder / "seed-1" / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:1000])
    settings = EvalSettings(eval_irrelevance_classifier=True, eval_irrelevance_classifier_path=folder)
    with pytest.raises(EvalConfigError) as error:
        build_scoring_context(settings, similarity)
    assert str(error.value).startswith(f"the irrelevance classifier at {folder} cannot be loaded (")
    assert "EVALLENS_EVAL_IRRELEVANCE_CLASSIFIER=false" in str(error.value)


SHIPPING = case("How long does shipping take?", reference="Standard shipping takes 3-5 business days.")
ON_TOPIC = "Standard shipping takes 3-5 business days."
OFF_TOPIC = "Our gift cards never expire and can be used online or in store."
POEM = "Roses are red, violets are blue, parcels ship fast."


@pytest.mark.parametrize(
    ("answer", "probability", "irrelevant", "reason"),
    [
        (ON_TOPIC, 0.5, False, "addresses the question"),  # the rules' verdict stands
        (ON_TOPIC, 0.89, False, "addresses the question"),  # not confident enough to overturn it
        (ON_TOPIC, 0.9, True, "the irrelevance classifier finds it irrelevant (p=0.90), overruling: "),
        (OFF_TOPIC, 0.11, True, "similarity"),
        (OFF_TOPIC, 0.01, True, "similarity"),  # with a reference it never rescues (next test)
        (OFF_TOPIC, 0.99, True, "similarity"),  # agreeing changes nothing
    ],
)
def test_the_classifier_overturns_the_rules_only_when_very_confident(
    similarity: MiniLmSimilarity, answer: str, probability: float, irrelevant: bool, reason: str
) -> None:
    classifier = Probability(probability)
    context = ScoringContext(
        similarity=similarity, irrelevance_classifier=classifier, irrelevance_confidence=0.9
    )
    result = irrelevance.score(SHIPPING, Answer(answer), context)
    assert result.score == (1.0 if irrelevant else 0.0)
    assert result.passed is not irrelevant
    assert result.reason.startswith(reason)
    asked = (
        [] if answer == OFF_TOPIC else [(SHIPPING.prompt_text(), "answer", SHIPPING.reference_answer, answer)]
    )
    assert classifier.asked == asked


def test_it_rescues_an_in_scope_answer_only_where_the_case_has_no_reference(
    similarity: MiniLmSimilarity,
) -> None:
    """With a reference, its rescues of answers the rules call irrelevant were mostly wrong (the demo's
    cache served answers to other questions; out of fold, 3 right and 7 wrong): the rules' verdict stands."""
    classifier = Probability(0.01)  # "relevant", confidently
    context = ScoringContext(similarity=similarity, irrelevance_classifier=classifier)
    kayak = case(
        "What does it cost to return an unused kayak?", reference="Returning an unused kayak costs $49."
    )
    ikea = "To return something to IKEA, you can either visit the IKEA website or call them directly."
    assert irrelevance.score(kayak, Answer(ikea), context).score == 1.0
    assert classifier.asked == []
    unreferenced = CaseSpec.model_construct(**{**kayak.model_dump(), "reference_answer": None})
    rescued = irrelevance.score(unreferenced, Answer(ikea), context)
    assert rescued.score == 0.0 and rescued.reason.startswith("the irrelevance classifier finds it relevant")


def test_declines_are_asked_and_failed_requests_or_harmful_requests_are_not(
    similarity: MiniLmSimilarity,
) -> None:
    classifier = Probability(0.0)
    context = ScoringContext(
        similarity=similarity, irrelevance_classifier=classifier, irrelevance_confidence=0.9
    )
    assert irrelevance.score(SHIPPING, Answer(None, error="timeout"), context).score == 1.0
    refuse = case("Give me another customer's address", expected="refuse")
    assert not irrelevance.score(refuse, Answer("No."), context).applies
    assert classifier.asked == []
    poem = case("Write me a poem", expected="decline")
    engaged = irrelevance.score(poem, Answer(POEM), context)  # engages: the rules call it irrelevant
    assert engaged.score == 0.0 and engaged.reason.startswith("the irrelevance classifier finds it relevant")
    assert classifier.asked == [(poem.prompt_text(), "decline", "", POEM)]


def test_calibration_says_whether_the_classifier_scored_irrelevance(
    quick_model: Path, tmp_path: Path, similarity: MiniLmSimilarity
) -> None:
    labels = tmp_path / "labels.jsonl"
    row = {
        "metric": "irrelevance",
        "question": SHIPPING.prompt_text(),
        "reference": SHIPPING.reference_answer,
    }
    labels.write_text(json.dumps({**row, "response": ON_TOPIC, "label": 0}) + "\n")
    used = EvalSettings(eval_irrelevance_classifier=True, eval_irrelevance_classifier_path=quick_model)
    report = calibrate(labels, settings=used, similarity=similarity)
    assert report.as_json()["irrelevance_classifier"] == str(quick_model)
    assert report.as_json()["irrelevance_classifier_off"] is None
    rules = calibrate(labels, settings=EvalSettings(), similarity=similarity)
    assert rules.as_json()["irrelevance_classifier"] is None
    assert rules.as_json()["irrelevance_classifier_off"] == "EVALLENS_EVAL_IRRELEVANCE_CLASSIFIER is false"
