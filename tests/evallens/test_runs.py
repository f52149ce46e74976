"""Which run a run is judged against (``baseline_of``): what its gate stored, else ``main``, else the last;
and the latest completed run of a configuration (``latest_completed_run``)."""

import uuid
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import text
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from evallens.db.models import EvalCase, EvalResult, EvalRun, EvalSet, EvalTag, GateReport
from evallens.runs import (
    RunNotFound,
    baseline_of,
    latest_completed_run,
    list_runs,
    load_results,
    resolve_run,
)

SCORING: dict[str, object] = {
    "metrics_code": "abc",
    "settings": {"similarity_threshold": 0.225},
    "harm_classifier": None,
}


def add_run(
    session: Session,
    eval_set: EvalSet,
    minutes_ago: int,
    status: str = "completed",
    fingerprint: str = "fp",
    label: str | None = None,
    scoring: dict[str, object] | None = None,
) -> uuid.UUID:
    run = EvalRun(
        id=uuid.uuid4(),
        project=eval_set.project,
        eval_set_id=eval_set.id,
        label=label,
        endpoint="http://target",
        config={},
        config_fingerprint=fingerprint,
        scoring=SCORING if scoring is None else scoring,
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


def test_the_latest_completed_run_of_a_fingerprint_scoring_and_label(sessions: sessionmaker[Session]) -> None:
    with sessions.begin() as session:
        eval_set = EvalSet(name="support", version=1, content_hash="h")
        other_set = EvalSet(name="support", version=2, content_hash="h2")
        session.add_all([eval_set, other_set])
        session.flush()
        eval_set_id = eval_set.id
        # oldest first: a query without ORDER BY (table order) would find the oldest
        add_run(session, eval_set, 50, label="baseline")
        add_run(session, eval_set, 40, label="baseline")
        newest_baseline = add_run(session, eval_set, 30, label="baseline")
        candidate = add_run(session, eval_set, 20, label="candidate")
        add_run(session, eval_set, 10, status="running", label="baseline")
        add_run(session, eval_set, 5, status="failed", label="baseline")
        add_run(session, eval_set, 1, fingerprint="other", label="baseline")
        add_run(session, other_set, 1, label="baseline")
        # newer, but scored by other metrics: a retrained classifier, a moved threshold
        add_run(session, eval_set, 3, label="baseline", scoring={**SCORING, "harm_classifier": "manifest 1"})
        moved = {**SCORING, "settings": {"similarity_threshold": 0.3}}
        add_run(session, eval_set, 2, label="candidate", scoring=moved)
    with sessions() as session:

        def latest(fingerprint: str, label: str | None = None) -> EvalRun | None:
            return latest_completed_run(session, eval_set_id, fingerprint, scoring=SCORING, label=label)

        baseline = latest("fp", label="baseline")
        assert baseline is not None and baseline.id == newest_baseline
        any_label = latest("fp")
        assert any_label is not None and any_label.id == candidate
        assert latest("fp", label="watch") is None
        assert latest("unseen") is None
        rescored = latest_completed_run(session, eval_set_id, "fp", scoring=moved)
        assert rescored is not None and rescored.id != candidate
        assert latest_completed_run(session, eval_set_id, "fp", scoring={**SCORING, "judge": "x"}) is None


def two_projects_runs(session: Session) -> tuple[uuid.UUID, uuid.UUID]:
    """A completed run of the default project and one of project alpha, in sets of the same name."""
    default_set = EvalSet(name="support", version=1, content_hash="h")
    alpha_set = EvalSet(project="alpha", name="support", version=1, content_hash="h")
    session.add_all([default_set, alpha_set])
    session.flush()
    return add_run(session, default_set, 20), add_run(session, alpha_set, 10)


def test_a_tag_or_gate_report_cannot_point_at_another_projects_run(sessions: sessionmaker[Session]) -> None:
    """Before: tags and gate reports referenced a run by id alone; alpha's tag could name a default run."""
    with sessions.begin() as session:
        default_run, alpha_run = two_projects_runs(session)
    crossing = [
        EvalTag(project="alpha", eval_set_name="support", tag="main", run_id=default_run),
        GateReport(
            project="alpha", eval_set_name="support", baseline_run_id=default_run,
            candidate_run_id=alpha_run, verdict="pass", report={},
        ),
        GateReport(
            project="alpha", eval_set_name="support", baseline_run_id=alpha_run,
            candidate_run_id=default_run, verdict="pass", report={},
        ),
    ]  # fmt: skip
    for row in crossing:
        with (
            pytest.raises(IntegrityError, match="violates foreign key constraint"),
            sessions.begin() as session,
        ):
            session.add(row)
    with sessions.begin() as session:  # within its project, as before
        session.add(EvalTag(project="alpha", eval_set_name="support", tag="main", run_id=alpha_run))
    with sessions() as session:
        assert [item.tags for item in list_runs(session, project="alpha")] == [["main"]]


def test_a_tag_written_past_the_schema_never_lists_in_another_project(
    sessions: sessionmaker[Session],
) -> None:
    """A fake for a row no code path writes and the schema refuses: alpha's tag on a default run, its
    foreign key triggers off (``session_replication_role``) as a hand-made restore could leave it."""
    with sessions.begin() as session:
        default_run, _ = two_projects_runs(session)
        session.add(EvalTag(eval_set_name="support", tag="main", run_id=default_run))
    with sessions.begin() as session:
        session.execute(text("SET LOCAL session_replication_role = replica"))
        session.add(EvalTag(project="alpha", eval_set_name="support", tag="alpha-only", run_id=default_run))
    with sessions() as session:
        assert [item.tags for item in list_runs(session)] == [["main"]]


def test_a_gate_or_tag_written_past_the_schema_never_makes_another_projects_run_a_baseline(
    sessions: sessionmaker[Session],
) -> None:
    """A fake for rows no code path writes and the schema refuses (written with foreign key triggers off):
    alpha's ``main`` tag and alpha's gate report naming a default run. Before: ``baseline_of`` an alpha
    run answered that default run."""
    with sessions.begin() as session:
        default_run, alpha_run = two_projects_runs(session)
        alpha_set = session.get_one(EvalSet, session.get_one(EvalRun, alpha_run).eval_set_id)
        alpha_first = add_run(session, alpha_set, 30)
    with sessions.begin() as session:
        session.execute(text("SET LOCAL session_replication_role = replica"))
        session.add(EvalTag(project="alpha", eval_set_name="support", tag="main", run_id=default_run))
    with sessions() as session:
        assert baseline_of(session, str(alpha_run), project="alpha") == alpha_first
    with sessions.begin() as session:
        session.execute(text("SET LOCAL session_replication_role = replica"))
        session.add(
            GateReport(
                project="alpha", eval_set_name="support", baseline_run_id=default_run,
                candidate_run_id=alpha_run, verdict="pass", report={},
            )
        )  # fmt: skip
    with sessions() as session:
        assert baseline_of(session, str(alpha_run), project="alpha") == alpha_first


def test_a_run_naming_another_projects_set_is_found_in_neither(sessions: sessionmaker[Session]) -> None:
    """A fake for a row no code path writes and the schema refuses (written with foreign key triggers
    off): a default run of alpha's set. Before: ``resolve_run`` gave it with alpha's set (``gate``
    replayed that set, storing its candidate in alpha), ``latest_completed_run`` of alpha's set gave it
    (``eval watch`` gated against it), ``baseline_of`` looked for its baseline under that set's name and
    ``list_runs`` listed it with alpha's set."""
    with sessions.begin() as session:
        default_run, alpha_run = two_projects_runs(session)
        default_set = session.get_one(EvalSet, session.get_one(EvalRun, default_run).eval_set_id)
        alpha_set_id = session.get_one(EvalRun, alpha_run).eval_set_id
        crossing = add_run(session, default_set, 5)
        session.execute(text("SET LOCAL session_replication_role = replica"))
        session.get_one(EvalRun, crossing).eval_set_id = alpha_set_id
    with sessions() as session:
        assert session.get_one(EvalRun, crossing).project != "alpha"
        with pytest.raises(RunNotFound, match=f"no run or tag '{crossing}'"):
            resolve_run(session, str(crossing))
        assert resolve_run(session, str(default_run)).eval_set.id == default_set.id  # its own set
        assert baseline_of(session, str(crossing)) is None  # not default_run, of a set named alike
        latest = latest_completed_run(session, alpha_set_id, "fp", scoring=SCORING)
        assert latest is not None and latest.id == alpha_run  # alpha's own run, not the newer crossing one
        # listed in neither project, rather than under alpha's set name in the default one
        assert [item.run_id for item in list_runs(session)] == [default_run]
        assert [item.run_id for item in list_runs(session, project="alpha")] == [alpha_run]


def test_a_result_naming_another_projects_case_is_not_loaded(sessions: sessionmaker[Session]) -> None:
    """A fake for a row no code path writes and the schema refuses (written with foreign key triggers
    off): a default run's result on a case of alpha's set. Before: ``load_results`` gave it, and the
    comparison and flipped cases of the default run showed alpha's question and reference answer."""
    with sessions.begin() as session:
        default_run, alpha_run = two_projects_runs(session)
        cases = [
            EvalCase(
                eval_set_id=session.get_one(EvalRun, run).eval_set_id, case_key=key, scenario="returns",
                question=f"{key}?", expected_behavior="answer",
            )
            for run, key in ((default_run, "own"), (alpha_run, "alpha-only"))
        ]  # fmt: skip
        session.add_all(cases)
        session.flush()
        session.execute(text("SET LOCAL session_replication_role = replica"))
        set_id = session.get_one(EvalRun, default_run).eval_set_id
        session.add_all(EvalResult(run_id=default_run, eval_set_id=set_id, case_id=case.id) for case in cases)
    with sessions() as session:
        assert [item.case.case_key for item in load_results(session, default_run)] == ["own"]


def test_a_run_of_another_projects_set_or_a_result_of_another_sets_case_is_refused(
    sessions: sessionmaker[Session],
) -> None:
    """Before: runs referenced their set, and results their case, by id alone; a row written past the
    eval engine (plain SQL) could name alpha's set for a default run, or a case of another set (alpha's,
    or another version of its own) for a default run's result."""
    with sessions.begin() as session:
        default_run, alpha_run = two_projects_runs(session)
        default_set_id = session.get_one(EvalRun, default_run).eval_set_id
        alpha_set_id = session.get_one(EvalRun, alpha_run).eval_set_id
        version_2 = EvalSet(name="support", version=2, content_hash="h2")
        session.add(version_2)
        session.flush()
        case_ids = {
            set_id: session.scalars(
                text(
                    "INSERT INTO eval_cases (eval_set_id, case_key, scenario, expected_behavior)"
                    " VALUES (:s, 'c', 'returns', 'answer') RETURNING id"
                ),
                {"s": set_id},
            ).one()
            for set_id in (default_set_id, alpha_set_id, version_2.id)
        }
    insert_run = (
        "INSERT INTO eval_runs (id, eval_set_id, endpoint, config, config_fingerprint, status)"
        " VALUES (gen_random_uuid(), :s, 'http://target', '{}', 'fp', 'completed')"
    )
    insert_result = "INSERT INTO eval_results (run_id, eval_set_id, case_id) VALUES (:r, :s, :c)"
    crossing = [
        (insert_run, {"s": alpha_set_id}),  # a default run of alpha's set
        # a default run's result on alpha's case, naming either set
        (insert_result, {"r": default_run, "s": default_set_id, "c": case_ids[alpha_set_id]}),
        (insert_result, {"r": default_run, "s": alpha_set_id, "c": case_ids[alpha_set_id]}),
        # on a case of another version of its own set
        (insert_result, {"r": default_run, "s": default_set_id, "c": case_ids[version_2.id]}),
    ]
    for statement, values in crossing:
        with (
            pytest.raises(IntegrityError, match="violates foreign key constraint"),
            sessions.begin() as session,
        ):
            session.execute(text(statement), values)
    with sessions.begin() as session:  # within its set, as before
        session.execute(text(insert_run), {"s": default_set_id})
        session.execute(
            text(insert_result), {"r": default_run, "s": default_set_id, "c": case_ids[default_set_id]}
        )
    with sessions() as session:
        assert [item.case.id for item in load_results(session, default_run)] == [case_ids[default_set_id]]
