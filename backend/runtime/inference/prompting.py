"""The text every family is asked: question, lettered options, and an instruction ending at the answer.

Why one place: a re-run must ask every model the same thing so that differences between budgets and
models are the model's, not the prompt's. The MCQA instruction is lmms-eval's Video-MME post-prompt;
it ends right before the answer token, which letter scoring reads. The chat template of each
checkpoint wraps this text (and the video) in the model's own conversation markup.
"""

from __future__ import annotations

from store.answers import lettered, option_letters  # the letters' one home (store.answers)

__all__ = ["MCQA_INSTRUCTION", "OPEN_INSTRUCTION", "lettered", "option_letters", "user_text"]

MCQA_INSTRUCTION = "Answer with the option's letter from the given choices directly."
OPEN_INSTRUCTION = "Answer the question using a single word or phrase."


def user_text(question: str, options: list[str], answer_type: str) -> str:
    """The user turn's text for an MCQA or open-ended item."""
    if answer_type == "mcqa":
        return "\n".join([question.strip(), *lettered(options), MCQA_INSTRUCTION])
    return f"{question.strip()}\n{OPEN_INSTRUCTION}"
