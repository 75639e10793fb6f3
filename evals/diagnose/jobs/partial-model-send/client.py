"""Client: reshapes the global model to (21, 10), trains, and sends back only the 20 weight rows (the bias row is
dropped): round 0 works, round 1 receives the 200 values the server averaged and cannot reshape them."""

import numpy as np
import nvflare.client as flare
from nvflare.app_common.abstract.fl_model import FLModel

ROWS, COLS = 21, 10

flare.init()
site = flare.get_site_name()
while flare.is_running():
    model = flare.receive()
    weights = np.asarray(model.params["numpy_key"], dtype=float).reshape(ROWS, COLS)
    weights = weights + 0.1  # one "training" step
    print(f"site={site} round={model.current_round} trained on {weights.shape}")
    flare.send(FLModel(params={"numpy_key": weights[:-1].ravel()}, metrics={"loss": 1.0 / (1 + model.current_round)}))
