"""The typed contracts (``backend.contracts``): every field described, the JSON-schema snapshot, and the
real ``--json`` output of every command held to its contract on the demo store.

After a deliberate change to a contract, regenerate the snapshot and review its diff:

    .venv/bin/python -m tests.test_contracts --update
"""

from __future__ import annotations

import contextlib
import difflib
import io
import json
import sys
import time
from pathlib import Path
from typing import get_type_hints

import msgspec
import pytest

from backend import views
from backend.contracts import audits, common, inspector, policies, report, runs, store
from backend.contracts import explain as explain_contracts
from backend.contracts import views as view_contracts
from backend.contracts.base import Contract, to_json
from backend.contracts.catalog import REPORTS, json_schema, parsed
from backend.extras import missing_worker_extra
from store import health as store_health
from store import ingest as store_ingest
from store import jobs as store_jobs
from store import registry as store_registry
from store.ingest import publish as store_publish

SNAPSHOT = Path(__file__).parent / "snapshots" / "contracts.schema.json"
TITLE = "trajaudit --json reports (backend.contracts)"
# The modules whose objects are Structs: backend's contracts and the store's own records.
MODULES = (common, view_contracts, audits, report, policies, explain_contracts, inspector, store)
MODULES += (store_health, store_jobs, store_registry, store_ingest, store_publish)
MODEL, OTHER = "synthetic-A-7B", "synthetic-B-13B"
WORKER_REPORTS = {"models demo", "sweep"}  # need the worker extra: not run in the torch-free tier
# Needs a Ray cluster: its report is held to the contract by tests/test_logs.py (a dispatcher over stand-in actors)
# and by tests/test_dispatch.py on a cluster.
CLUSTER_REPORTS = {"dispatch"}


def current_schema() -> dict:
    return json_schema(title=TITLE)


def schema_text(schema: dict) -> str:
    return json.dumps(schema, indent=1, ensure_ascii=False) + "\n"


def struct_classes() -> list[type[Contract]]:
    """Every Struct contract of backend/contracts/."""
    return [
        obj
        for m in MODULES
        for obj in vars(m).values()
        if isinstance(obj, type) and issubclass(obj, Contract) and obj is not Contract and obj.__module__ == m.__name__
    ]


def test_every_struct_field_is_described():
    """A Struct's schema has its docstring's first line and a description on every field (``doc``)."""
    classes = struct_classes()
    assert len(classes) >= 50
    problems = []
    for cls in classes:
        d = msgspec.json.schema(cls)["$defs"][cls.__name__]
        if not d.get("description"):
            problems.append(f"{cls.__name__}: no description")
        undescribed = [k for k, p in d["properties"].items() if not p.get("description")]
        if undescribed:
            problems.append(f"{cls.__name__}: undescribed {undescribed}")
    assert not problems, "\n".join(problems)


def test_an_extending_contract_inherits_its_bases_fields():
    defs = current_schema()["$defs"]
    assert defs["OverviewReport"]["properties"]["n_items"]["description"] == "matched items"
    assert list(defs["OverviewReport"]["properties"])[:4] == ["grid", "n_items", "n_excluded", "models"]  # base first
    quiet = defs["QuietTransition"]["properties"]
    assert (
        quiet["from"]["description"] == "configuration a"
        and "hidden_rescued" not in defs["QuietTransition"]["required"]
    )
    assert list(quiet)[:2] == ["from", "to"]  # ``from_`` in Python, ``from`` in JSON


def test_schema_snapshot_is_current():
    """A change to a contract shows here as a diff; regenerate with ``python -m tests.test_contracts --update``."""
    expected, actual = SNAPSHOT.read_text(), schema_text(current_schema())
    diff = "".join(difflib.unified_diff(expected.splitlines(True), actual.splitlines(True), "snapshot", "contracts"))
    assert actual == expected, (
        f"the contracts changed: review the diff, then run `python -m tests.test_contracts --update`\n{diff[:6000]}"
    )


def test_schema_describes_every_report():
    schema = current_schema()
    assert set(schema["properties"]) == set(REPORTS)
    assert all(d.get("description") for d in schema["$defs"].values())
    ci = schema["$defs"]["MetricsCI"]  # ci is keyed by what it qualifies (never flat "accuracy[16f]" keys)
    accuracy = ci["properties"]["accuracy"]
    assert accuracy["type"] == "object" and ci["additionalProperties"] is False and not ci["required"]
    row = schema["$defs"]["OverviewReport"]["properties"]["task_types"]  # a table row: its columns follow the grid
    assert "accuracy[<config>]" in row["additionalProperties"]["items"]["description"]


def test_views_and_analyses_return_their_contracts():
    from backend.analysis import (
        cascade,
        compare,
        continuous,
        crossflows,
        flows,
        interventions,
        isocompute,
        metrics,
        noise,
        predictor,
        selection,
    )
    from backend.runtime import rerun, worker_pool
    from backend.runtime import selection as batch
    from backend.scope import inspector as scope_inspector
    from backend.scope import matrix, resolve

    vc, pc, ac, sc = view_contracts, policies, audits, store
    expected = {
        views.overview: vc.OverviewReport,
        views.flows_view: vc.FlowsReport,
        views.items_page: vc.ItemsPage,
        views.compare_view: vc.CompareReport,
        views.predictor_view: pc.PredictorReport,
        views.explain_view: explain_contracts.ExplainReport,
        views.cascade_view: pc.CascadeThresholdReport | pc.CascadeSweepReport,
        metrics.mcqa_metrics: vc.McqaMetrics,
        metrics.transition: common.Transition,
        metrics.transition_between: ac.CrossTransition,
        continuous.continuous_metrics: vc.ContinuousMetrics | None,
        flows.sankey: vc.Sankey,
        compare.confusion_overlap: vc.ConfusionOverlap,
        cascade.evaluate: pc.CascadeAtThreshold,
        cascade.sweep: pc.CascadeSweep,
        predictor.report: pc.Predictor,
        noise.summary: ac.NoiseAudit,
        noise.split_transition: common.QuietTransition,
        noise.transition_without_noise: common.QuietTransition,
        noise.sankey_without_noise: vc.Sankey,
        interventions.audit: ac.InterventionsAudit,
        views.interventions_view: ac.InterventionsAudit,
        interventions.recovery: ac.Recovery,
        interventions.agreement: ac.Agreement,
        isocompute.isocompute: ac.IsocomputeAudit,
        views.isocompute_view: ac.IsocomputeAudit,
        isocompute.compare_group: ac.IsoGroup,
        crossflows.cross_flows: ac.CrossmodelAudit,
        views.crossmodel_view: ac.CrossmodelAudit,
        scope_inspector.inspect_record: inspector.InspectReport,
        matrix.available: sc.StoreContents,
        resolve.Resolved.header: common.ScopeHeader,
        worker_pool.overview: sc.JobsOverview,
        worker_pool.job_row: sc.JobRow,
        worker_pool.local_worker: sc.LocalWorker,
        rerun.submit_many: ac.Enqueued,
        rerun.outcome: runs.RerunOutcome,
        rerun.submit: runs.RerunOutcome,
        rerun.wait: runs.RerunOutcome,
        selection.compare: runs.BatchComparison,
        views.selection_comparison: runs.BatchComparison,
        views.batch_report: runs.SelectionRerunReport,
        batch.submit: runs.RerunBatch,
        batch.progress: runs.BatchProgress,
    }
    wrong = {
        f.__qualname__: get_type_hints(f).get("return")
        for f, t in expected.items()
        if get_type_hints(f).get("return") != t
    }
    assert not wrong, wrong


def test_the_stores_records_are_their_contracts():
    """A record the store hands out is the contract a command prints (one definition, no mirror to keep equal):
    the contracts name the store's classes, and the queue's printed job has the fields of its row, its times as
    ISO-8601 text (one list of fields, ``store.jobs.JobFields``, two time types)."""
    from store.health import RepairReport, Report
    from store.ingest import IngestSummary
    from store.jobs import Job, JobRecord, WorkerInfo
    from store.registry import ModelSpec

    assert (REPORTS["check"], REPORTS["repair"], REPORTS["models demo"]) == (Report, RepairReport, ModelSpec)
    assert msgspec.json.schema(Report)["$defs"]["Report"]["properties"]["problems"]["items"] == {
        "$ref": "#/$defs/Problem"
    }
    assert store.JobRecord is JobRecord and REPORTS["ingest"] is IngestSummary
    job = Job(id=3, model="m", benchmark="b", item_id="i", config="8f", seed=None, force=False, state="queued",
              created_at=0.0, started_at=None, finished_at=None, worker_id=None, lease_expires_at=None, attempts=0,
              error=None, result_ref=None)  # fmt: skip
    printed = to_json(job.record())
    assert printed["created_at"] == "1970-01-01T00:00:00+00:00" and printed["started_at"] is None
    assert list(printed) == list(Job.__struct_fields__) == list(JobRecord.__struct_fields__)
    worker = WorkerInfo(worker_id="w", model="m", device=None, current_job=None, pid=None, started_at=0.0, seen_at=1.0)
    assert list(store.WorkerRow.__struct_fields__) == [*WorkerInfo.__struct_fields__, "age_s"]
    assert to_json(worker.record())["seen_at"] == "1970-01-01T00:00:01+00:00"


@pytest.mark.worker
def test_the_sweep_returns_its_contracts():
    from backend.runtime.sweep import accounting, runner, verify  # the sweep engine imports torch

    expected = {
        runner.run_sweep: runs.SweepReport,
        runner.summarise: runs.SweepReport,
        runner.verification: runs.SweepVerify,
        verify.drift: runs.DriftCheck,
        accounting.reuse_table: list[runs.ReuseCeiling],
    }
    wrong = {
        f.__qualname__: get_type_hints(f).get("return")
        for f, t in expected.items()
        if get_type_hints(f).get("return") != t
    }
    assert not wrong, wrong


def test_a_value_that_breaks_its_contract_is_refused_with_its_path():
    good = {"store": "s", "sound": True, "version": 3, "files": 2, "rows": {"items": 4}, "problems": [], "orphans": []}
    assert to_json(parsed("check", good)) == good
    with pytest.raises(msgspec.ValidationError, match=r"Expected `bool`, got `int` - at `\$.sound`"):
        parsed("check", good | {"sound": 1})
    report = {"accuracy": {"8f": [0.1, 0.3]}, "best_fixed": [0.2]}
    with pytest.raises(msgspec.ValidationError, match=r"Expected `array` of length 2, got 1 - at `\$.best_fixed`"):
        msgspec.convert(report, view_contracts.MetricsCI)
    with pytest.raises(msgspec.ValidationError, match="unknown field `accuracy\\[8f\\]`"):
        msgspec.convert({"accuracy[8f]": [0.1, 0.3]}, view_contracts.MetricsCI)


def _cli(argv: list[str]):
    from backend.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(argv)
    assert code == 0, (argv, code)
    return json.loads(out.getvalue())


@pytest.fixture(scope="module")
def outputs(demo_store) -> list[tuple[str, list[str], object]]:
    """(contract, argv, parsed JSON) for every command of ``REPORTS``, some in several modes, on the demo store."""
    from backend.runtime import registry, worker_pool
    from store.queue import JobQueue

    s = ["--store", str(demo_store)]
    pair = f"{MODEL},{OTHER}"
    runs: list[tuple[str, list[str]]] = [
        ("metrics", ["metrics", *s, "--models", pair, "--bootstrap", "20", "--benchmark", "synthetic-mlvu"]),
        ("metrics", ["metrics", *s, "--models", MODEL, "--bootstrap", "0", "--beyond-noise", "--grid", "text,16f,64f"]),
        ("flows", ["flows", *s, "--model", MODEL, "--models", pair]),
        ("flows", ["flows", *s, "--model", MODEL, "--from", "8f", "--to", "64f", "--kind", "harmed", "--beyond-noise"]),
        ("items", ["items", *s, "--model", MODEL, "--annotations", "--limit", "5"]),
        ("items", ["items", *s, "--model", MODEL, "--models", pair]),
        ("flows --scores", ["flows", *s, "--model", MODEL, "--scores", "--benchmark", "synthetic-mlvu"]),
        (
            "flows --scores",
            [
                "flows",
                *s,
                "--model",
                MODEL,
                "--scores",
                "--benchmark",
                "synthetic-mlvu",
                "--tolerance",
                "0.05",
                "--from",
                "8f",
                "--to",
                "64f",
                "--kind",
                "improved",
                "--score-cutoff",
                "0.5",
            ],
        ),
        ("items --page", ["items", *s, "--model", MODEL, "--models", pair, "--sort", "disagreement", "--page", "2"]),
        (
            "items --page",
            ["items", *s, "--model", MODEL, "--benchmark", "synthetic-mlvu", "--sort", "drop", "--page", "1"],
        ),
        (
            "compare",
            ["compare", *s, "--models", pair, "--bootstrap", "20", "--top", "5", "--benchmark", "synthetic-mlvu"],
        ),
        ("compare", ["compare", *s, "--models", MODEL, "--bootstrap", "0"]),
        ("explain", ["explain", *s, "--model", MODEL, "--models", pair, "--flow", "8f:64f:harmed", "--min-size", "5"]),
        ("explain", ["explain", *s, "--model", MODEL, "--tag", "confused", "--no-pairs"]),
        ("cascade --sweep", ["cascade", *s, "--model", MODEL, "--sweep", "--bootstrap", "20"]),
        ("cascade --threshold", ["cascade", *s, "--model", MODEL, "--threshold", "0.7", "--bootstrap", "20"]),
        ("cascade --threshold", ["cascade", *s, "--model", MODEL, "--threshold", "0.5", "--bootstrap", "0"]),
        ("predictor", ["predictor", *s, "--model", MODEL, "--folds", "3"]),
        ("audit noise", ["audit", "noise", *s, "--model", MODEL]),
        (
            "audit isocompute",
            ["audit", "isocompute", *s, "--model", MODEL, "--default-pixels", "100000", "--bootstrap", "20"],
        ),
        ("audit isocompute", ["audit", "isocompute", *s, "--model", MODEL]),
        ("audit crossmodel", ["audit", "crossmodel", *s, "--models", pair, "--config", "16f", "--limit", "3"]),
        ("info", ["info", *s]),
        ("check", ["check", *s]),
    ]
    got = [(name, argv, _cli([*argv, "--json"])) for name, argv in runs]
    items = got[4][2]
    got.append(
        (
            "inspect",
            ["inspect"],
            _cli(["inspect", *s, "--benchmark", items[0]["benchmark"], "--item", items[0]["item_id"], "--json"]),
        )
    )
    from store.store import Store

    open_item = Store(demo_store).query("SELECT benchmark, item_id FROM items WHERE answer_type = 'open' LIMIT 1")
    history = ["inspect", *s, "--benchmark", items[0]["benchmark"], "--item", items[0]["item_id"], "--history"]
    got.append(("inspect --history", history, _cli([*history, "--json"])))  # rows: tests/test_store_never_loses.py
    got.append(
        (
            "inspect",
            ["inspect", "open-ended"],
            _cli(["inspect", *s, "--benchmark", open_item.benchmark[0], "--item", open_item.item_id[0], "--json"]),
        )
    )

    # The queue: re-runs of the terminal regressions (a registered model), then one job of each state.
    ckpt = Path(demo_store).parent / "ckpt"
    ckpt.mkdir(exist_ok=True)
    (ckpt / "config.json").write_text('{"model_type": "qwen2_5_vl"}')
    registry.add(demo_store, registry.ModelSpec(MODEL, "qwen2_5_vl", str(ckpt), max_frames=256))
    argv = ["audit", "interventions", *s, "--model", MODEL, "--bootstrap", "20", "--enqueue", "128f/random-s7"]
    got.append(("audit interventions", argv, _cli([*argv, "--json"])))
    for row in items[:4]:  # four more jobs, whatever the intervention queued
        _cli(
            [
                "rerun",
                *s,
                "--model",
                MODEL,
                "--benchmark",
                row["benchmark"],
                "--item",
                row["item_id"],
                "--config",
                "128f/random-s8",
                "--json",
            ]
        )
    queue = JobQueue(demo_store)
    queue.heartbeat("w1", MODEL, "cpu", None)
    for finish in (queue.complete, queue.fail):
        job = queue.claim("w1", MODEL, lease_s=60)
        finish(job.id, "w1", "done-ref" if finish == queue.complete else "it broke")
    running = queue.claim("w1", MODEL, lease_s=60)
    queue.heartbeat("w1", MODEL, "cpu", running.id)
    pid_file = worker_pool._files(demo_store, OTHER)[1]
    pid_file.parent.mkdir(parents=True, exist_ok=True)
    pid_file.write_text(json.dumps({"pid": 2**22 + 1, "model": OTHER, "device": "cpu", "started_at": time.time()}))
    queued = queue.list_jobs(state="queued", limit=1)[0]
    got.append(("jobs --cancel", ["jobs", "--cancel"], _cli(["jobs", *s, "--cancel", str(queued.id), "--json"])))
    got.append(("jobs", ["jobs"], _cli(["jobs", *s, "--json"])))
    got.append(("repair", ["repair"], _cli(["repair", *s, "--json"])))

    # The commands that write (after the reads above, so they see the store they expect).
    item = ["--benchmark", items[0]["benchmark"], "--item", items[0]["item_id"]]
    for config in ("16f", "128f/random-s9"):  # answered from the store; queued
        argv = ["rerun", *s, "--model", MODEL, *item, "--config", config]
        got.append(("rerun", argv, _cli([*argv, "--json"])))
    for config in ("32f", "128f/random-s9"):  # stored, so compared; queued, so nothing compared yet
        argv = [
            "rerun",
            *s,
            "--model",
            MODEL,
            "--benchmark",
            items[0]["benchmark"],
            "--flow",
            "8f:64f:harmed",
            "--config",
            config,
        ]
        got.append(("rerun --flow", argv, _cli([*argv, "--json"])))
    tags = _cli(["annotate", "tags", "--json"])
    got.append(("annotate tags", ["annotate", "tags"], tags))
    for extra in (["--note", "a note"], ["--model", MODEL]):
        argv = ["annotate", "add", *s, *item, "--tag", next(iter(tags)), "--author", "tester", *extra]
        got.append(("annotate add", argv, _cli([*argv, "--json"])))
    got.append(("annotate list", ["annotate", "list"], _cli(["annotate", "list", *s, "--json"])))
    argv = ["annotate", "delete", *s, got[-2][2]["annotation_id"]]
    got.append(("annotate delete", argv, _cli([*argv, "--json"])))
    for k, fmt_args in enumerate(
        (
            ["--models", pair, "--gallery", "2", "--bootstrap", "20"],
            ["--models", MODEL, "--gallery", "0", "--bootstrap", "0"],
        )
    ):
        out = Path(demo_store).parent / f"report-{k}.json"  # a new file each: --out refuses an existing one
        argv = ["report", *s, *fmt_args, "--format", "json", "--out", str(out)]
        with contextlib.redirect_stdout(io.StringIO()):  # "wrote <file>"; the JSON goes to --out
            from backend.cli import main

            assert main(argv) == 0
        got.append(("report --format json", argv, json.loads(out.read_text())))

    # A tiny random-weight model (built offline, a few seconds) swept over two items, one cell verified.
    if not missing_worker_extra():  # the torch-free tier checks every other contract
        got.append(("models demo", ["models", "demo"], _cli(["models", "demo", *s, "tiny", "--json"])))
        argv = [
            "sweep",
            *s,
            "--model",
            "tiny",
            "--benchmark",
            items[0]["benchmark"],
            "--grid",
            "text,2f",
            "--limit",
            "2",
            "--verify",
            "1",
            "--no-progress",
            "--device",
            "cpu",
        ]
        got.append(("sweep", argv, _cli([*argv, "--json"])))
    got.append(("models list", ["models", "list"], _cli(["models", "list", *s, "--json"])))

    # ingest: a small long table into a store of its own (the demo store stays the one above)
    from tests.ingest_fixtures import write_table

    table = write_table(Path(demo_store).parent / "ingest-input")
    argv = ["ingest", str(table), "--store", str(Path(demo_store).parent / "ingested")]
    got.append(("ingest", argv, _cli([*argv, "--json"])))
    argv = ["compact", "--store", str(Path(demo_store).parent / "ingested")]
    got.append(("compact", argv, _cli([*argv, "--json"])))
    # demo: a small one of its own, no videos (its re-run model is null without the worker extra)
    argv = ["demo", "--store", str(Path(demo_store).parent / "small-demo"), "--items", "8", "--no-videos"]
    got.append(("demo", argv, _cli([*argv, "--json"])))

    # videos: one benchmark's demo clips linked by a template over items.video (the others stay unlinked)
    videos = Path(demo_store) / "videos"
    argv = [
        "videos",
        "link",
        *s,
        "--benchmark",
        items[0]["benchmark"],
        "--dataset",
        str(videos),
        "--template",
        "{video}",
    ]
    got.append(("videos link", argv, _cli([*argv, "--json"])))
    argv = ["videos", "check", *s]
    got.append(("videos check", argv, _cli([*argv, "--json"])))
    return got


@pytest.mark.slow
def test_every_command_prints_its_contract(outputs):
    skipped = CLUSTER_REPORTS | (WORKER_REPORTS if missing_worker_extra() else set())
    assert {name for name, _, _ in outputs} == set(REPORTS) - skipped
    problems = []
    for name, argv, out in outputs:
        try:
            parsed(name, out)
        except msgspec.ValidationError as exc:
            problems.append(f"{' '.join(argv)}: {exc}")
    assert not problems, "\n".join(problems[:40])


@pytest.mark.slow
def test_the_outputs_exercise_the_optional_keys(outputs):
    """The modes above reach the keys only some flags add (so the contract's optional parts are checked too)."""
    by = {}
    for name, _, out in outputs:
        by.setdefault(name, []).append(out)
    quiet = by["metrics"][1]["models"][MODEL]["transitions"][0]
    assert "hidden_rescued" in quiet and by["metrics"][1]["models"][MODEL]["ci"] == {}
    assert "continuous" in by["metrics"][0]["models"][MODEL] and by["metrics"][0]["models"][MODEL]["ci"]["accuracy"]
    assert by["metrics"][0]["binary"]["n_scored_items"] and "continuous" in by["compare"][0]["metrics"][MODEL]
    assert "items" not in by["flows --scores"][0] and by["flows --scores"][1]["items"]
    assert any(r["drop"] is not None for r in by["items --page"][1]["rows"])
    assert (
        by["flows"][1]["within_noise_hidden"]
        and by["flows"][1]["items"]
        and "hidden_within" in by["flows"][1]["links"][0]
    )
    assert "n_annotations" in by["items"][0][0] and "overlap" in by["compare"][0] and "overlap" not in by["compare"][1]
    assert by["cascade --sweep"][0]["matching"] is not None and "accuracy_ci" in by["cascade --threshold"][0]
    assert by["audit isocompute"][0]["groups"] and "note" in by["audit isocompute"][1]
    assert by["audit interventions"][0]["enqueued"]["queued"] > 0
    jobs = by["jobs"][0]
    assert {j["state"] for j in jobs["jobs"]} == {"queued", "running", "done", "failed", "cancelled"}
    assert jobs["workers"] and jobs["local"][0]["state"] == "exited"
    assert by["inspect"][0]["video"]["info"] is not None and by["inspect"][0]["frames"]
    assert by["inspect"][0]["texts"] is None and by["inspect"][1]["texts"]["rows"][0]["diff"]["answer_words"]
    answered, queued = by["rerun"]  # one shape either way: a queued request has every result key, as null
    assert answered["from_store"] and answered["written_at"] and queued["written_at"] is None
    assert set(answered) == set(queued)
    flow = by["rerun --flow"]
    assert flow[0]["comparison"]["n_compared"] and flow[1]["comparison"]["accuracy_new"]["value"] is None
    assert missing_worker_extra() or (by["sweep"][0]["cells"]["done"] == 4 and by["sweep"][0]["verify"]["cells"] == 1)
    assert by["report --format json"][0]["gallery"] and by["report --format json"][0]["policy"]["available"]
    assert by["report --format json"][1]["overlap"] is None and by["annotate list"][0][0]["model"] == MODEL
    assert by["ingest"][0]["files"] and by["ingest"][0]["flagged"]
    assert by["explain"][0]["agreement"] and by["explain"][0]["answers"]["moved"] and by["explain"][0]["pairs"]
    assert by["explain"][1]["agreement"] is None and by["explain"][1]["pair_search"] is None
    assert by["videos link"][0]["linked"] == by["videos link"][0]["matched_items"] > 0
    assert any(b["unlinked"] and b["examples"]["unlinked"] for b in by["videos check"][0]["benchmarks"])


def _update() -> None:
    SNAPSHOT.parent.mkdir(parents=True, exist_ok=True)
    SNAPSHOT.write_text(schema_text(current_schema()))
    print(f"wrote {SNAPSHOT} ({len(current_schema()['$defs'])} definitions)")


if __name__ == "__main__":
    if sys.argv[1:] != ["--update"]:
        sys.exit("usage: python -m tests.test_contracts --update   (rewrites tests/snapshots/contracts.schema.json)")
    _update()
