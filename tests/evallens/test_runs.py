"""Which run a run is judged against (``baseline_of``): what its gate stored, else ``main``, else the last."""

import uuid
from datetime import UTC, datetime, timedelta

from sqlalchemy.orm import Session, sessionmaker

from evallens.db.models import EvalRun, EvalSet, EvalTag, GateReport
from evallens.runs import baseline_of


def add_run(session: Session, eval_set: EvalSet, minutes_ago: int, status: str = "completed") -> uuid.UUID:
    run = EvalRun(
        id=uuid.uuid4(),
        eval_set_id=eval_set.id,
        endpoint="http://target",
        config={},
        config_fingerprint="fp",
        status=status,
        started_at=datetime.now(UTC) - timedelta(minutes=minutes_ago),
    )
    session.add(run)
    session.flush()
    return run.id


def test_the_gate_s_baseline_then_main_then_the_previous_completed_run(
    sessions: sessionmaker[Session],
) -> None:
    with sessions.begin() as session:
        eval_set = EvalSet(name="support", version=1, content_hash="h")
        session.add(eval_set)
        session.flush()
        first, _failed, tagged, gated_against, candidate = (
            add_run(session, eval_set, 50),
            add_run(session, eval_set, 40, status="failed"),
            add_run(session, eval_set, 30),
            add_run(session, eval_set, 20),
            add_run(session, eval_set, 10),
        )
    with sessions() as session:
        assert baseline_of(session, str(candidate)) == gated_against  # the previous completed run
        assert baseline_of(session, str(tagged)) == first  # the failed run in between is skipped
        assert baseline_of(session, str(first)) is None
        assert baseline_of(session, str(candidate), project="other") is None
    with sessions.begin() as session:
        session.add(EvalTag(eval_set_name="support", tag="main", run_id=tagged))
    with sessions() as session:
        assert baseline_of(session, str(candidate)) == tagged
        assert baseline_of(session, str(tagged)) == first  # main is never its own baseline
    with sessions.begin() as session:
        session.add(
            GateReport(
                eval_set_name="support",
                baseline_run_id=gated_against,
                candidate_run_id=candidate,
                verdict="pass",
                report={},
            )
        )
    with sessions() as session:
        assert baseline_of(session, str(candidate)) == gated_against  # what the gate judged against
