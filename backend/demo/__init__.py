"""The demo: a deterministic synthetic store (``synthetic``) and its random-weights re-run model
(``model``), labelled synthetic everywhere they show."""
