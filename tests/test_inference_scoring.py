"""Scoring, budgets and prompts shared by every adapter, pinned on hand-checked values."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import torch

from backend.runtime.inference.frames import budget_shape, fit_to_budget, resize_frames
from backend.runtime.inference.prompting import MCQA_INSTRUCTION, user_text
from backend.runtime.inference.scoring import score_letters
from store.answers import lettered, option_letters


def test_score_letters_renormalises_over_the_letters():
    logits = torch.tensor([0.0, 1.0, 2.0, 0.5, -1.0, 3.0, 0.0, 1.0])
    scores = score_letters(logits, [2, 5, 7], ["A", "B", "C"])
    full = np.exp(logits.numpy()) / np.exp(logits.numpy()).sum()
    chosen = full[[2, 5, 7]]
    assert scores.letter_mass == pytest.approx(chosen.sum())
    for letter, p in zip("ABC", chosen / chosen.sum()):
        assert scores.option_probs[letter] == pytest.approx(p)
    assert scores.answer == "B" and scores.confidence == pytest.approx(chosen[1] / chosen.sum())


def test_score_letters_reads_half_precision_logits_in_float32():
    logits = torch.zeros(5, dtype=torch.bfloat16)
    scores = score_letters(logits, [0, 1], ["A", "B"])
    assert scores.option_probs == {"A": 0.5, "B": 0.5} and scores.letter_mass == pytest.approx(0.4)


def test_budget_shape_by_hand():
    # 1080p at 151k: snap to 1092 x 1932 (over), so scale by sqrt(1080*1920/151000) and floor to 28
    assert budget_shape(1080, 1920, 151_000, 28) == (280, 504)
    assert budget_shape(56, 56, 151_000, 28) == (56, 56)  # already within: never upscaled
    assert budget_shape(10, 10, 151_000, 28) == (28, 28)  # at least one token
    assert budget_shape(100, 60, 3_000, 1) == (70, 42)


@pytest.mark.parametrize(("height", "width"), [(1080, 1920), (360, 640), (720, 540), (97, 301)])
def test_budget_shape_is_qwen_smart_resize(height, width):
    from transformers.models.qwen2_vl.video_processing_qwen2_vl import smart_resize

    for pixels, factor in itertools.product([28 * 28 * 64, 151_000, 602_112], [28, 32]):
        expected = smart_resize(height, width, factor=factor, min_pixels=factor * factor, max_pixels=pixels)
        assert budget_shape(height, width, pixels, factor) == expected


def test_resize_frames():
    clip = np.full((3, 40, 60, 3), 77, dtype=np.uint8)
    out = resize_frames(clip, (20, 30))
    assert out.shape == (3, 20, 30, 3) and out.dtype == np.uint8 and (out == 77).all()
    assert resize_frames(clip, (40, 60)) is clip
    fitted = fit_to_budget(clip, 600, 10)
    assert fitted.shape[1:3] == (20, 30) and math.prod(fitted.shape[1:3]) <= 600


def test_prompt_text():
    assert option_letters(["x", "y", "z"]) == ["A", "B", "C"]
    assert lettered(["A. Apples.", "Candles", "(C) Dogs"]) == ["A. Apples.", "B. Candles", "(C) Dogs"]
    text = user_text(" What? ", ["A. Apples.", "B. Candles."], "mcqa")
    assert text == f"What?\nA. Apples.\nB. Candles.\n{MCQA_INSTRUCTION}"
    assert user_text("What?", [], "open").startswith("What?\n")
