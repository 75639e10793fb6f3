"""Held-out samples per site (the evaluator's weights) and how far below the model's worth each site scores."""

SIZES = {"site-1": 100, "site-2": 300}
HELD_OUT_PENALTY = 0.01
