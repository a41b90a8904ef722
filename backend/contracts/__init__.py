"""Typed contracts: the shape of every report the CLI prints with ``--json`` and a page draws.

Each report is a ``TypedDict`` (the functions return plain dicts; these say which keys, of which
types, they hold). Conventions, checked by ``tests/test_contracts.py``:

- The class docstring's first paragraph says what the object is; after it, one ``field: description``
  line per field. A class that extends another (``class OverviewReport(McqaMetrics)``) describes
  only the fields it adds.
- Keys that are not Python names are declared in a ``TypedDict("Name", {...})`` base (``from``), and
  a key spelled with ``<name>`` (``accuracy[<config>]``) stands for one key per configuration or model.
- ``NotRequired`` marks a key present only in some modes (the flag that adds it is in its description);
  ``X | None`` is JSON ``null`` where the number is not available (never 0).
- Rates are fractions in ``[0, 1]``; an interval is ``[lo, hi]`` (``common.Interval``); ``ci`` has the
  shape of the numbers it qualifies (``ci["accuracy"][config]``, ``ci["oracle_accuracy"]``).

``REPORTS`` names each contract by the command that prints it; ``tests/snapshots/contracts.schema.json``
is their JSON Schema (``backend.contracts.schema``), so a change to a contract is a visible diff.
Regenerate it after a deliberate change with ``python -m tests.test_contracts --update``.
"""

from typing import Any

from backend.contracts.audits import CrossmodelAudit, InterventionsAudit, IsocomputeAudit, NoiseAudit
from backend.contracts.common import Interval, ScopeHeader, Transition
from backend.contracts.explain import ExplainReport
from backend.contracts.inspector import HistoryReport, InspectReport
from backend.contracts.policies import CascadeSweepReport, CascadeThresholdReport, PredictorReport
from backend.contracts.report import ReportData
from backend.contracts.runs import IngestReport, RerunOutcome, SelectionRerunReport, SweepReport
from backend.contracts.store import (
    Annotation,
    CheckReport,
    InfoReport,
    JobRecord,
    JobsOverview,
    ModelEntry,
    RepairReport,
    VideoCheckReport,
    VideoLinkReport,
)
from backend.contracts.views import (
    CompareReport,
    FlowsReport,
    ItemRow,
    ItemsPage,
    McqaMetrics,
    OverviewReport,
    ScoreFlowsReport,
)

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
    "check": CheckReport,
    "repair": RepairReport,
    "rerun": RerunOutcome,
    "rerun --flow": SelectionRerunReport,
    "sweep": SweepReport,
    "ingest": IngestReport,
    "models list": list[ModelEntry],
    "models demo": ModelEntry,
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

NAMED: dict[str, Any] = {"Interval": Interval}
"""Type aliases the schema names once (under ``$defs``) instead of spelling them out at every use."""

__all__ = [
    "NAMED",
    "REPORTS",
    "Annotation",
    "CascadeSweepReport",
    "CascadeThresholdReport",
    "CheckReport",
    "CompareReport",
    "CrossmodelAudit",
    "ExplainReport",
    "FlowsReport",
    "InfoReport",
    "IngestReport",
    "InspectReport",
    "HistoryReport",
    "Interval",
    "InterventionsAudit",
    "IsocomputeAudit",
    "ItemRow",
    "ItemsPage",
    "JobRecord",
    "JobsOverview",
    "McqaMetrics",
    "ModelEntry",
    "NoiseAudit",
    "OverviewReport",
    "PredictorReport",
    "RepairReport",
    "ReportData",
    "RerunOutcome",
    "ScopeHeader",
    "ScoreFlowsReport",
    "SelectionRerunReport",
    "SweepReport",
    "Transition",
    "VideoCheckReport",
    "VideoLinkReport",
]
