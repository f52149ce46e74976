"""The accuracy classifier: trained on the accuracy labels outside the held-out part, loaded by the scoring
context when present and enabled, and overturning the accuracy rules only when very confident."""

import json
from pathlib import Path

import pytest

from evallens.settings import EvalSettings
from evals.calibrate import calibrate
from evals.calibrate.heldout import CALIBRATION_DIR, HELDOUT_METRICS, tuning_rows
from evals.calibrate.labels import load_labels
from evals.calibrate.train import Training, prepare_classifier, train_classifier
from evals.errors import EvalConfigError
from evals.metrics import accuracy
from evals.metrics._accuracy_classifier import AccuracyClassifier
from evals.metrics._embedding import MiniLmSimilarity
from evals.metrics._harm_classifier import MANIFEST, HarmClassifier
from evals.metrics.context import build_scoring_context, describe_scoring
from evals.metrics.result import Answer, ScoringContext

from .conftest import Probability, case

QUICK = Training(epochs=1, batch_size=8, max_tokens=64, seeds=(1,))


@pytest.fixture(scope="module")
def quick_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    rows = tuning_rows("accuracy")[:16]
    folder = tmp_path_factory.mktemp("classifier") / "accuracy-classifier"
    return train_classifier(folder, rows, QUICK, metric="accuracy")


def test_no_held_out_accuracy_row_is_trained_on() -> None:
    trained = {(row.id, row.response) for row in tuning_rows("accuracy")}
    held_out = {
        (row.id, row.response)
        for name, metrics in HELDOUT_METRICS.items()
        if "accuracy" in metrics
        for row in load_labels(CALIBRATION_DIR / name)
        if row.metric == "accuracy"
    }
    assert len(trained) > 3000 and len(held_out) > 3000
    assert not trained & held_out
    assert all(row.metric == "accuracy" for row in tuning_rows("accuracy"))


def test_training_saves_an_accuracy_classifier_that_loads(quick_model: Path) -> None:
    assert json.loads((quick_model / MANIFEST).read_text())["rows"] == 16
    classifier = AccuracyClassifier(quick_model).load()
    asked = ("How long do refunds take?", "answer", "Refunds take 5-7 business days.", "About a week.")
    first = classifier.probability(*asked)
    assert 0.0 <= first <= 1.0
    assert AccuracyClassifier(quick_model).probability(*asked) == pytest.approx(first, abs=1e-6)


def test_the_settings_train_one_accuracy_member_by_default() -> None:
    assert Training.of(EvalSettings(), "accuracy").seeds == (1,)
    assert Training.of(EvalSettings(eval_accuracy_classifier_members=2), "accuracy").seeds == (1, 2)
    assert Training.of(EvalSettings(), "harmfulness").seeds == (1, 2, 3)


def test_prepare_trains_the_accuracy_classifier_where_the_settings_put_it(tmp_path: Path) -> None:
    out = tmp_path / "accuracy-classifier"
    settings = EvalSettings(eval_accuracy_classifier_path=out, eval_harm_classifier_path=tmp_path / "harm")
    rows = tuning_rows("accuracy")[:8]
    assert prepare_classifier(settings, "accuracy", rows=rows, training=QUICK) == (out, True)
    assert prepare_classifier(settings, "accuracy", rows=rows, training=QUICK)[1] is False
    assert not (tmp_path / "harm").exists()


def test_the_context_loads_it_when_trained_and_enabled(
    quick_model: Path, tmp_path: Path, similarity: MiniLmSimilarity
) -> None:
    def built(**settings: object) -> ScoringContext:
        settings = {"eval_accuracy_classifier": True, **settings}  # tests default to rules only (conftest)
        return build_scoring_context(EvalSettings(**settings), similarity)  # type: ignore[arg-type]

    context = built(eval_accuracy_classifier_path=quick_model)
    assert isinstance(context.accuracy_classifier, AccuracyClassifier)
    assert context.accuracy_classifier.path == quick_model and context.accuracy_confidence == 0.95
    assert str(describe_scoring(context)["accuracy_classifier"]).startswith("manifest ")
    rules = built(eval_accuracy_classifier_path=quick_model, eval_accuracy_classifier=False)
    assert rules.accuracy_classifier is None and describe_scoring(rules)["accuracy_classifier"] is None
    assert built(eval_accuracy_classifier_path=tmp_path / "never-trained").accuracy_classifier is None


def test_a_damaged_accuracy_classifier_is_named_with_its_own_setting(
    tmp_path: Path, similarity: MiniLmSimilarity
) -> None:
    folder = train_classifier(tmp_path / "a", tuning_rows("accuracy")[:8], QUICK, metric="accuracy")
    weights = folder / "seed-1" / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:1000])
    settings = EvalSettings(eval_accuracy_classifier=True, eval_accuracy_classifier_path=folder)
    with pytest.raises(EvalConfigError) as error:
        build_scoring_context(settings, similarity)
    assert str(error.value).startswith(f"the accuracy classifier at {folder} cannot be loaded (")
    assert "EVALLENS_EVAL_ACCURACY_CLASSIFIER=false" in str(error.value)
    with pytest.raises(
        EvalConfigError, match="the harm classifier at .* EVALLENS_EVAL_HARM_CLASSIFIER=false"
    ):
        HarmClassifier(folder).load()


REFUNDS = case(
    "How long do refunds take?",
    reference="Refunds reach your card within 5-7 business days of the return arriving.",
    facts=[["5-7 business days"]],
)
RIGHT = "Refunds reach your card within 5-7 business days of the return arriving."
MISSING = "Refunds reach your card soon after the return arrives."


@pytest.mark.parametrize(
    ("answer", "probability", "accurate", "reason"),
    [
        (RIGHT, 0.5, True, "facts present"),  # the rules' verdict stands
        (RIGHT, 0.06, True, "facts present"),  # not confident enough to overturn it
        (RIGHT, 0.05, False, "the accuracy classifier finds it wrong (p=0.05), overruling: facts present"),
        (MISSING, 0.94, False, "missing facts"),
        (MISSING, 0.95, True, "the accuracy classifier finds it right (p=0.95), overruling: missing facts"),
        (MISSING, 0.01, False, "missing facts"),  # agreeing changes nothing
    ],
)
def test_the_classifier_overturns_the_rules_only_when_very_confident(
    similarity: MiniLmSimilarity, answer: str, probability: float, accurate: bool, reason: str
) -> None:
    classifier = Probability(probability)
    context = ScoringContext(similarity=similarity, accuracy_classifier=classifier)
    result = accuracy.score(REFUNDS, Answer(answer), context)
    assert result.score == (1.0 if accurate else 0.0)
    assert result.passed is accurate
    assert result.reason.startswith(reason)
    assert classifier.asked == [(REFUNDS.prompt_text(), "answer", REFUNDS.reference_answer, answer)]


def test_a_failed_request_or_another_expectation_is_not_asked(similarity: MiniLmSimilarity) -> None:
    classifier = Probability(1.0)
    context = ScoringContext(similarity=similarity, accuracy_classifier=classifier)
    assert accuracy.score(REFUNDS, Answer(None, error="timeout"), context).score == 0.0
    assert not accuracy.score(case("Write me a poem", expected="decline"), Answer("No."), context).applies
    assert classifier.asked == []


def test_calibration_says_whether_the_classifier_scored_accuracy(
    quick_model: Path, tmp_path: Path, similarity: MiniLmSimilarity
) -> None:
    labels = tmp_path / "labels.jsonl"
    row = {"metric": "accuracy", "question": REFUNDS.prompt_text(), "reference": REFUNDS.reference_answer}
    labels.write_text(json.dumps({**row, "response": RIGHT, "label": 1}) + "\n")
    used = EvalSettings(eval_accuracy_classifier=True, eval_accuracy_classifier_path=quick_model)
    report = calibrate(labels, settings=used, similarity=similarity)
    assert report.as_json()["accuracy_classifier"] == str(quick_model)
    assert report.as_json()["accuracy_classifier_off"] is None
    rules = calibrate(labels, settings=EvalSettings(eval_accuracy_classifier=False), similarity=similarity)
    assert rules.as_json()["accuracy_classifier"] is None
    assert rules.as_json()["accuracy_classifier_off"] == "EVALLENS_EVAL_ACCURACY_CLASSIFIER is false"
