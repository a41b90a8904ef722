"""The dashboard's one colour palette, so correct/wrong and each model look the same on every page.

Correct (and rescued) is one green-teal, wrong (and harmed) one red-orange, on every chart, glyph
and table. Models get colours chosen away from those two hues, assigned by the model's position in
the store's full (sorted) model list, so a model keeps its colour whichever subset is selected.
"""

from __future__ import annotations

CORRECT = "#1b9e77"  # green-teal: correct answers, rescued flows
WRONG = "#e4572e"  # red-orange: wrong answers, harmed flows
NEUTRAL = "#9aa0a6"  # missing cells, "no answer", unavailable
INK = "#2b2d31"  # text drawn on charts
FRAME_ADDED = "#3b6fb6"  # frames a budget adds over the previous one (timeline markers)
FRAME_KEPT = NEUTRAL
ACCENT = "#6b7fd7"  # neutral emphasis (counts that are neither correct nor wrong)

# Qualitative colours that stay clear of CORRECT and WRONG (no greens, no reds/oranges).
MODEL_COLOURS = (
    "#3b6fb6",  # blue
    "#8e5ac8",  # purple
    "#c9a227",  # ochre
    "#4a5560",  # slate
    "#d45c9e",  # magenta
    "#2a9df4",  # sky
    "#8c6d46",  # brown
    "#6b7fd7",  # periwinkle
)


def model_colours(all_models: list[str]) -> dict[str, str]:
    """Colour per model, by position in the sorted full model list (stable across selections)."""
    return {m: MODEL_COLOURS[k % len(MODEL_COLOURS)] for k, m in enumerate(sorted(all_models))}


def rgba(hex_colour: str, alpha: float) -> str:
    """``#rrggbb`` with an alpha, as Plotly's ``rgba(...)`` string (bands, light flows)."""
    h = hex_colour.lstrip("#")
    r, g, b = (int(h[k : k + 2], 16) for k in (0, 2, 4))
    return f"rgba({r},{g},{b},{alpha:g})"


# Flow kinds (backend.analysis.metrics.FLOW_KINDS) -> link colours: changes saturated, stable states light.
FLOW_COLOURS = {
    "rescued": rgba(CORRECT, 0.85),
    "harmed": rgba(WRONG, 0.85),
    "stable-correct": rgba(CORRECT, 0.22),
    "stable-wrong": rgba(WRONG, 0.22),
}
STATE_COLOURS = {"correct": CORRECT, "wrong": WRONG}
SANKEY_COLOURS = STATE_COLOURS | FLOW_COLOURS  # a Sankey colours its nodes by state and its links by kind
