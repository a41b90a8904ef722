"""Every metric the Overview, the CLI's tables, the report and the Compare page show (accuracy and, for
open-ended items, scores), defined once: its key
(the JSON field), label, one-line plain definition, how its value reads, the function that computes it and
its entry in docs/metrics.md.

Why one registry: a metric's label, order, help text and formula used to live in four files, and a page could
show a number the docs never defined. The surfaces read their labels and definitions here, and
``tests/test_metric_registry.py`` fails when a surface shows a metric this registry or the docs lack (the
way datasette's ``test_docs`` holds its settings to their documentation).

``python -m backend.present.metrics --write docs/metrics.md`` regenerates the docs' plain-words table.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from backend.analysis import cascade, compare, continuous, interventions, isocompute, noise
from backend.analysis import metrics as formulas
from backend.analysis.mcnemar import mcnemar_exact
from backend.present.text import MISSING, number, p_value, pct, pp, signed_pp


@dataclass(frozen=True)
class Metric:
    """One metric: ``key`` its JSON field, ``label`` its name on screen, ``definition`` one plain sentence for a
    newcomer (shown under the value, not only on hover), ``format`` how a value reads (no interval), ``formula``
    the function that computes it, ``anchor`` its ``id`` in docs/metrics.md."""

    key: str
    label: str
    definition: str
    format: Callable[[object], str]
    formula: Callable[..., object]
    anchor: str

    @property
    def docs(self) -> str:
        """Where the docs define it (a link target)."""
        return f"docs/metrics.md#{self.anchor}"


@dataclass(frozen=True)
class Quantity:
    """A number a page's card shows beside the metrics that is no metric of its own: how many items or groups a
    section covers, a setting, a plain accuracy on a section's items. ``key`` is its field in the command's ``--json``;
    the label and the one plain sentence live here, so a page does not word them (``tests/test_metric_registry.py``)."""

    key: str
    label: str
    definition: str


_M = TypeVar("_M", Metric, Quantity)


def _count(x: object) -> str:
    return f"{x:,}" if isinstance(x, int) else str(x)


def _kappa(x: object) -> str:
    v = number(x)
    return MISSING if v is None else f"{v:.3f}"


def _frames(x: object) -> str:
    v = number(x)
    return MISSING if v is None else f"{v:.1f}"


def _later(module: str, name: str) -> Callable[..., object]:
    """The formula ``module.name``, imported when called: the budget predictor's module loads scikit-learn and
    pandas, which every command reading this registry would pay for at import."""

    def formula(*args: object, **kwargs: object) -> object:
        return getattr(importlib.import_module(module), name)(*args, **kwargs)

    formula.__module__, formula.__name__, formula.__qualname__ = module, name, name
    return formula


# The headline metrics, in the order every surface lists them (cards, tables, the report, the CLI).
HEADLINE_METRICS = (
    Metric(
        "best_fixed",
        "Best fixed",
        "Accuracy of the one budget that scores highest, used for every item.",
        pp,
        formulas.best_fixed,
        "best-fixed",
    ),
    Metric(
        "oracle_accuracy",
        "Oracle",
        "Share of items answered right at one budget or more: the ceiling if each item got its own budget.",
        pp,
        formulas.oracle_accuracy,
        "oracle-accuracy",
    ),
    Metric(
        "oracle_headroom",
        "Oracle headroom",
        "Oracle minus best fixed: what choosing the budget item by item could add.",
        pp,
        formulas.oracle_headroom,
        "oracle-headroom",
    ),
    Metric(
        "visual_confusion_rate",
        "Visual confusion",
        "Share of items right with fewer pixels and wrong with more.",
        pp,
        formulas.visual_confusion_rate,
        "visual-confusion",
    ),
    Metric(
        "text_overwrite_rate",
        "Text overwrite",
        "Share of items right from the text alone and wrong once frames are shown.",
        pp,
        formulas.text_overwrite_rate,
        "text-overwrite",
    ),
    Metric(
        "text_overwrite_of_text_correct",
        "Overwrite / text-correct",
        "Of the items right from the text alone, the share that frames turn wrong.",
        pp,
        formulas.text_overwrite_of_text_correct,
        "overwrite-of-text-correct",
    ),
    Metric(
        "mean_churn",
        "Mean churn / step",
        "Share of items whose answer turns right or wrong at a step up in budget, averaged over the steps.",
        pp,
        formulas.mean_churn,
        "mean-churn",
    ),
    Metric(
        "terminal_regressions",
        "Terminal regressions",
        "Items right at a smaller budget and wrong at the largest one (a count).",
        _count,
        formulas.terminal_regression,
        "terminal-regressions",
    ),
)
# A step between two configurations (the bars under the curve, the transitions table, the story sentence).
TRANSITION_METRICS = (
    Metric(
        "rescued",
        "Rescued",
        "Items wrong before the step and right after it.",
        _count,
        formulas.flow_counts,
        "rescued-harmed",
    ),
    Metric(
        "harmed",
        "Harmed",
        "Items right before the step and wrong after it.",
        _count,
        formulas.flow_counts,
        "rescued-harmed",
    ),
    Metric(
        "net",
        "Net",
        "Rescued minus harmed, as a share of the items: how far the accuracy curve moves.",
        signed_pp,
        formulas.net,
        "net",
    ),
    Metric(
        "churn",
        "Churn",
        "Rescued plus harmed, as a share of the items: how many answers changed.",
        pp,
        formulas.churn,
        "churn",
    ),
    Metric(
        "mcnemar_p",
        "McNemar p",
        "How likely a split of rescued against harmed this uneven is if the step changed nothing: near 1, the net could be chance.",
        p_value,
        mcnemar_exact,
        "mcnemar-p",
    ),
)


def _by_key(*metrics: _M) -> dict[str, _M]:
    """A namespace of metrics (or quantities) by their key, in the order given (the order the surfaces list them)."""
    return {m.key: m for m in metrics}


METRICS = _by_key(*HEADLINE_METRICS, *TRANSITION_METRICS)
# The open-ended (scored) items' metrics, by their field in a model's ``continuous`` block (``metrics --json``):
# a namespace of their own, since ``best_fixed`` there is a mean score, not an accuracy. Never averaged with
# the accuracy metrics above (docs/metrics.md, "Continuous scores").
SCORE_METRICS = _by_key(
    Metric("mean_score", "Mean score", "The average score of the scored items at one configuration.",
           pp, continuous.continuous_metrics, "mean-score"),
    Metric("best_fixed", "Best fixed score", "Mean score of the one configuration that scores highest, used for every item.",
           pp, continuous.continuous_metrics, "best-fixed-score"),
    Metric("oracle_mean", "Oracle mean", "Average over items of each item's best score at any configuration.",
           pp, continuous.continuous_metrics, "oracle-mean"),
    Metric("oracle_gap", "Oracle gap", "Oracle mean minus best fixed score: what choosing the budget item by item could add.",
           pp, continuous.continuous_metrics, "oracle-gap"),
    Metric("improved", "Improved", "Items whose score rises at the step by more than the tolerance.",
           _count, continuous.score_kinds, "improved-regressed"),
    Metric("regressed", "Regressed", "Items whose score falls at the step by more than the tolerance.",
           _count, continuous.score_kinds, "improved-regressed"),
    Metric("unchanged", "Unchanged", "Items whose score moves at the step by at most the tolerance.",
           _count, continuous.score_kinds, "improved-regressed"),
    Metric("improvement_rate", "Improvement rate", "Improved items as a share of the scored items.",
           pp, continuous.score_kinds, "improvement-rate"),
    Metric("regression_rate", "Regression rate", "Regressed items as a share of the scored items.",
           pp, continuous.score_kinds, "regression-rate"),
    Metric("sign_p", "Sign p", "How likely a split of improved against regressed this uneven is if the step changed nothing.",
           p_value, mcnemar_exact, "sign-p"),
)  # fmt: skip
# The audits' numbers (the Audits page's cards, ``trajaudit audit ... --json``'s fields), and the adaptive policies'
# (the Policies page's cards, ``cascade`` and ``predictor --json``): namespaces of their own, like the score
# metrics, since their ``accuracy`` and ``oracle_accuracy`` are a policy's or an allocation group's.
AUDIT_METRICS = _by_key(
    Metric("kappa_pooled", "Kappa", "Agreement of the base protocol and another on which items are right, beyond chance (Cohen's kappa).",
           _kappa, interventions.cohen_kappa, "protocol-kappa"),
    Metric("n_items_noisy", "Items that flip under repeats", "Items whose repeats at some configuration disagree (a count).",
           _count, noise.summary, "flip-rate"),
    Metric("mean_item_flip_rate", "Mean item flip rate", "Chance that two repeats of an item disagree, averaged over its configurations, then over items.",
           pct, noise.summary, "flip-rate"),
    Metric("best_single", "Best single", "Accuracy of the best single configuration of an equal-compute group.",
           pct, isocompute.compare_group, "complementarity"),
    Metric("oracle_accuracy", "Oracle over the allocations", "Share of items right under one or more configurations of an equal-compute group.",
           pct, isocompute.compare_group, "complementarity"),
    Metric("complementarity", "Complementarity", "Oracle minus the best single configuration: what choosing the allocation per item could gain.",
           pct, isocompute.compare_group, "complementarity"),
)  # fmt: skip
POLICY_METRICS = _by_key(
    Metric("accuracy", "Accuracy", "Share of items answered right where the cascade stops.",
           pct, cascade.evaluate, "confidence-cascade"),
    Metric("mean_frames_shared", "Mean frames, shared", "Frames per item when the frames of smaller budgets are reused: an item costs the budget it stops at.",
           _frames, cascade.evaluate, "confidence-cascade"),
    Metric("mean_frames_unshared", "Mean frames, not shared", "Frames per item when every budget visited is paid in full.",
           _frames, cascade.evaluate, "confidence-cascade"),
    Metric("saving", "Frame saving vs top", "One minus the mean shared frames over the top budget's frames, at the cheapest threshold matching it.",
           pct, cascade.sweep, "confidence-cascade"),
    Metric("frontier[argmax].accuracy", "Argmax accuracy", "Accuracy when each item is answered at the budget the predictor finds likeliest to suffice.",
           pct, _later("backend.analysis.predictor", "report"), "budget-predictor"),
    Metric("target_hit_rate", "Target hit rate", "Share of items whose predicted budget is exactly the cheapest sufficient one.",
           pct, _later("backend.analysis.predictor", "report"), "budget-predictor"),
    Metric("never_correct_share", "Never correct", "Share of items no budget answers right: their target is the top budget.",
           pct, _later("backend.analysis.predictor", "report"), "budget-predictor"),
)  # fmt: skip
# The quantities beside them: the audits' (an equal-compute group's items, the noise audit's items with repeats, the
# cross-model audit's two accuracies), the policies' and a batch re-run's comparison (``rerun_compare``).
AUDIT_QUANTITIES = _by_key(
    Quantity("n_items", "Items", "Items answered at every configuration of the group."),
    Quantity("n_items_with_repeats", "Items with repeats", "Items with a second answer at some budget (a run, seed or sampling policy at the same frames)."),
    Quantity("accuracy_from", "Accuracy of A", "The first model's accuracy at its configuration, on the items compared."),
    Quantity("accuracy_to", "Accuracy of B", "The second model's accuracy at its configuration, on the same items."),
)  # fmt: skip
POLICY_QUANTITIES = _by_key(
    Quantity("n_items", "Items", "Items with a confidence at every rung of the ladder: every policy's denominator here."),
    Quantity("threshold", "Threshold", "The confidence at or above which the cascade keeps a rung's answer."),
    Quantity("n_groups", "Video groups", "Cross-validation groups: the items of one video are held out together."),
)  # fmt: skip
RERUN_QUANTITIES = _by_key(
    Quantity("accuracy_new", "Correct under", "The re-run's answers that are right, of the items compared (Wilson interval)."),
    Quantity("accuracy_baseline", "Correct at", "The stored answers that are right, on the same items (Wilson interval)."),
)  # fmt: skip
COMPARE_METRICS = _by_key(
    Metric("confused_by_all", "Confused by every model", "Items every selected model finds visually confusing (a count).",
           _count, compare.confusion_overlap, "confused-by-all"),
    Metric("confused_by_any", "Confused by any model", "Items one or more of the selected models find visually confusing (a count).",
           _count, compare.confusion_overlap, "confused-by-any"),
    Metric("shared_share", "Shared confusion", "Confused by every model over confused by any: 1 when the models stumble on the same items.",
           pct, compare.shared_share, "shared-share"),
)  # fmt: skip
# The rates with a bootstrap interval (every headline but the count), and the Overview's cards (the
# overwrite share of text-correct items and the count sit in the per-model table only).
RATES = tuple(m.key for m in HEADLINE_METRICS if m.key != "terminal_regressions")
CARDS = tuple(k for k in RATES if k != "text_overwrite_of_text_correct")
# (key, label) of the rates, in order: the headline table's columns (``backend.present.tables``).
HEADLINES: tuple[tuple[str, str], ...] = tuple((k, METRICS[k].label) for k in RATES)
# The rates broken down per task type (``backend.analysis.metrics.task_type_breakdown``), in the same order.
TASK_RATES: tuple[tuple[str, str], ...] = tuple(
    (k, METRICS[k].label)
    for k in ("best_fixed", "oracle_accuracy", "oracle_headroom", "visual_confusion_rate", "text_overwrite_rate")
)


def labelled(registry: dict[str, Metric], report: object, keys: tuple[str, ...]) -> str:
    """``report``'s numbers under ``keys`` as the CLI's text shows them, labelled and formatted by ``registry``:
    ``Accuracy 55.4%; Mean frames, shared 10.3``."""
    return "; ".join(f"{registry[k].label} {registry[k].format(getattr(report, k))}" for k in keys)


def label(key: str) -> str:
    """A metric's name on screen."""
    return METRICS[key].label


# -- docs/metrics.md's plain-words table, generated ---------------------------------------------------

START = "<!-- metric-registry: generated by `python -m backend.present.metrics --write docs/metrics.md` -->"
END = "<!-- metric-registry: end -->"


def glossary() -> str:
    """Markdown: every metric's label, JSON key and plain definition, linked to its entry below."""
    lines = ["| metric | `--json` key | in plain words |", "|---|---|---|"]
    lines += [f"| [{m.label}](#{m.anchor}) | `{m.key}` | {m.definition} |" for m in METRICS.values()]
    lines += [
        f"| [{m.label}](#{m.anchor}) (open-ended) | `continuous.{m.key}` | {m.definition} |"
        for m in SCORE_METRICS.values()
    ]
    lines += [f"| [{m.label}](#{m.anchor}) (audits) | `{m.key}` | {m.definition} |" for m in AUDIT_METRICS.values()]
    lines += [f"| [{m.label}](#{m.anchor}) (policies) | `{m.key}` | {m.definition} |" for m in POLICY_METRICS.values()]
    lines += [
        f"| [{m.label}](#{m.anchor}) (compare) | `overlap.{m.key}` | {m.definition} |" for m in COMPARE_METRICS.values()
    ]
    quantities = {"audits": AUDIT_QUANTITIES, "policies": POLICY_QUANTITIES, "re-run": RERUN_QUANTITIES}
    lines += [
        f"| {q.label} ({where}) | `{q.key}` | {q.definition} |" for where, qs in quantities.items() for q in qs.values()
    ]
    return "\n".join(lines)


def replace_block(text: str, block: str) -> str:
    """``text`` with the part between the markers replaced by ``block`` (the markers must be there)."""
    head, rest = text.split(START, 1)
    return f"{head}{START}\n{block}\n{END}{rest.split(END, 1)[1]}"


if __name__ == "__main__":  # python -m backend.present.metrics [--write docs/metrics.md]
    if sys.argv[1:2] == ["--write"] and len(sys.argv) == 3:
        doc = Path(sys.argv[2])
        doc.write_text(replace_block(doc.read_text(), glossary()))
    else:
        print(glossary())
