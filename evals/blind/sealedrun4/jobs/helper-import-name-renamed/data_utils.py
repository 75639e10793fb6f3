"""Site data for the clients (load_site_split was renamed load_site_data)."""

import numpy as np

NUM_FEATURES = 8
TRUE_W = np.linspace(-1.0, 1.0, NUM_FEATURES + 1)


def load_site_data(site_name, n=600):
    """Features with a bias column and binary labels, drawn from the site's name."""
    rng = np.random.default_rng(sum(ord(c) for c in site_name))
    x = np.hstack([rng.normal(size=(n, NUM_FEATURES)), np.ones((n, 1))])
    y = (x @ TRUE_W + rng.normal(scale=0.5, size=n) > 0).astype(float)
    return x, y
