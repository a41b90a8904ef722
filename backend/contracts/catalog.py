"""Every command's contract by name (``REPORTS``), their JSON Schema and the tests' check of printed JSON.

Its own module, not the package's ``__init__``: importing it imports every contract module, which a command
that prints one report does not need (``benchmarks/contracts.py``); only the docs, the snapshot test and the
contract tests read the whole catalog.

``tests/snapshots/contracts.schema.json`` is ``json_schema``'s document, so a change to a contract is a
visible diff. Regenerate it after a deliberate change with ``python -m tests.test_contracts --update``.
"""

from typing import Any

import msgspec

from backend.contracts.audits import CrossmodelAudit, InterventionsAudit, IsocomputeAudit, NoiseAudit
from backend.contracts.demo import DemoSummary
from backend.contracts.explain import ExplainReport
from backend.contracts.inspector import HistoryReport, InspectReport
from backend.contracts.policies import CascadeSweepReport, CascadeThresholdReport, PredictorReport
from backend.contracts.report import ReportData
from backend.contracts.runs import DispatchStats, RerunOutcome, SelectionRerunReport, SweepReport
from backend.contracts.store import (
    Annotation,
    CompactReport,
    InfoReport,
    JobRecord,
    JobsOverview,
    VideoCheckReport,
    VideoLinkReport,
)
from backend.contracts.views import (
    CompareReport,
    FlowsReport,
    ItemRow,
    ItemsPage,
    OverviewReport,
    ScoreFlowsReport,
)
from store.health import RepairReport, Report
from store.ingest import IngestSummary
from store.registry import ModelSpec

REPORTS: dict[str, Any] = {
    "metrics": OverviewReport,
    "flows": FlowsReport,
    "flows --scores": ScoreFlowsReport,
    "items": list[ItemRow],
    "items --page": ItemsPage,
    "compare": CompareReport,
    "explain": ExplainReport,
    "inspect": InspectReport,
    "inspect --history": HistoryReport,
    "cascade --sweep": CascadeSweepReport,
    "cascade --threshold": CascadeThresholdReport,
    "predictor": PredictorReport,
    "audit noise": NoiseAudit,
    "audit interventions": InterventionsAudit,
    "audit isocompute": IsocomputeAudit,
    "audit crossmodel": CrossmodelAudit,
    "info": InfoReport,
    "jobs": JobsOverview,
    "jobs --cancel": JobRecord,
    "check": Report,
    "repair": RepairReport,
    "compact": CompactReport,
    "rerun": RerunOutcome,
    "rerun --flow": SelectionRerunReport,
    "sweep": SweepReport,
    "dispatch": DispatchStats,
    "ingest": IngestSummary,
    "models list": list[ModelSpec],
    "models demo": ModelSpec,
    "demo": DemoSummary,
    "annotate add": Annotation,
    "annotate list": list[Annotation],
    "annotate delete": Annotation,
    "annotate tags": dict[str, str],
    "report --format json": ReportData,
    "videos link": VideoLinkReport,
    "videos check": VideoCheckReport,
}
"""``trajaudit <command> --json`` -> the contract of what it prints (``rerun --flow``: also ``--state`` and
``--items``; ``models demo``: also ``add`` and ``remove``; ``report --format json`` writes to ``--out``)."""

DRAFT = "https://json-schema.org/draft/2020-12/schema"


def json_schema(title: str = "") -> dict[str, Any]:
    """One JSON Schema document (draft 2020-12): each of ``REPORTS`` under ``properties``, every object it
    holds once under ``$defs`` (msgspec's generator: descriptions from the class docstrings and the fields'
    ``doc``)."""
    refs, defs = msgspec.json.schema_components(list(REPORTS.values()), ref_template="#/$defs/{name}")
    props = dict(zip(REPORTS, refs, strict=True))
    return {
        "$schema": DRAFT,
        "title": title,
        "type": "object",
        "properties": props,
        "$defs": dict(sorted(defs.items())),
    }


def parsed(command: str, value: Any) -> Any:
    """``value`` (what ``trajaudit <command> --json`` printed, parsed) read as that command's contract: raises
    ``msgspec.ValidationError`` naming the path of the first field that breaks it (the tests' check)."""
    return msgspec.convert(value, REPORTS[command])


__all__ = ["DRAFT", "REPORTS", "json_schema", "parsed"]
