"""Server-side aggregator: a running, sample-weighted mean of the sites' weights (no list of models kept in memory)."""

import numpy as np
from nvflare.app_common.abstract.fl_model import FLModel
from nvflare.app_common.aggregators.model_aggregator import ModelAggregator


class RunningMean(ModelAggregator):
    def __init__(self):
        super().__init__()
        self.total = None
        self.count = 0.0

    def accept_model(self, model: FLModel):
        n = float(model.meta.get("NUM_STEPS_CURRENT_ROUND", 1))
        w = np.asarray(model.params["numpy_key"], dtype=float)
        self.total = n * w if self.total is None else self.total + n * w
        self.count += n

    def aggregate_model(self) -> FLModel:
        return FLModel(params={"numpy_key": self.total / self.count})

    def reset_stats(self):
        self.total = []
        self.count = 0.0
