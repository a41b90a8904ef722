"""Typed contracts: the shape of every report the CLI prints with ``--json`` and a page draws.

A report is a ``msgspec.Struct`` (``base.Contract``): the object ``backend/`` builds and validates
once, the page, the CLI and the report read by attribute, and the JSON Schema, all one definition
(``base.py`` says why msgspec). One module per family: the views (``views.py``: metrics, flows, items
--page, compare; ``common.py``), the audits (``audits.py``), the Inspector (``inspector.py``), explain
(``explain.py``), the adaptive policies (``policies.py``), re-runs and sweeps (``runs.py``), the store,
queue, registry and videos (``store.py``, naming the store's own records: ``store.health.Report``,
``store.jobs.JobRecord``, ``store.registry.ModelSpec``, defined once in ``store/`` on ``store.contract``'s
base; ``ingest --json`` prints ``store.ingest.IngestSummary``) and the shareable report (``report.py``).

- A Struct field's description is its ``Annotated[..., doc("...")]``; ``X | UnsetType = UNSET`` is a key
  present only in some modes; ``X | None`` is JSON ``null`` where the number is not available (never 0).
- A table row whose columns follow the grid or the models (``accuracy[<config>]``) is a dict
  (``views.TableCell``), described on its alias.
- Rates are fractions in ``[0, 1]``; an interval is ``[lo, hi]`` (``common.Interval``); ``ci`` has the
  shape of the numbers it qualifies (``ci.accuracy[config]``, ``ci.oracle_accuracy``).

This package imports nothing: a command imports the modules of the reports it prints, and every module
uses postponed annotations, so a field's type and description are evaluated when msgspec first needs
them (a validation, a schema), not at import (``benchmarks/contracts.py``). ``catalog.REPORTS`` names each
contract by the command that prints it; ``catalog.json_schema()`` is their JSON Schema.
"""
