"""Client v2: reads the site table with pandas (site-2 switched to it for its new export format)."""

import numpy as np
import nvflare.client as flare
import pandas as pd
from nvflare.app_common.abstract.fl_model import FLModel

NUM_FEATURES = 8
TRUE_W = np.linspace(-1.0, 1.0, NUM_FEATURES + 1)


def site_frame(site_name, n=400):
    rng = np.random.default_rng(sum(ord(c) for c in site_name))
    frame = pd.DataFrame(rng.normal(size=(n, NUM_FEATURES)), columns=[f"f{i}" for i in range(NUM_FEATURES)])
    frame["bias"] = 1.0
    frame["label"] = (frame.to_numpy() @ TRUE_W + rng.normal(scale=0.5, size=n) > 0).astype(float)
    return frame


def main():
    flare.init()
    frame = site_frame(flare.get_site_name())
    x, y = frame.drop(columns="label").to_numpy(), frame["label"].to_numpy()
    while flare.is_running():
        model = flare.receive()
        w = np.asarray(model.params["numpy_key"], dtype=float)
        for _ in range(5):
            p = 1.0 / (1.0 + np.exp(-(x @ w)))
            w = w - 0.05 * x.T @ (p - y) / len(y)
        acc = float(np.mean(((x @ w) > 0).astype(float) == y))
        flare.send(
            FLModel(params={"numpy_key": w}, metrics={"accuracy": acc}, meta={"NUM_STEPS_CURRENT_ROUND": len(y)})
        )


if __name__ == "__main__":
    main()
