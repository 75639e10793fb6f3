"""Server-side aggregator: a coordinate-wise trimmed mean (drops the `trim` lowest and highest site values),
weighted by the sites' sample counts."""

import numpy as np
from nvflare.app_common.abstract.fl_model import FLModel
from nvflare.app_common.aggregators.model_aggregator import ModelAggregator


class TrimmedMean(ModelAggregator):
    def __init__(self, trim: int = 1):
        super().__init__()
        self.trim = trim
        self.models = []
        self.samples = []

    def accept_model(self, model: FLModel):
        self.models.append(np.asarray(model.params["numpy_key"], dtype=float))
        self.samples.append(float(model.meta.get("NUM_STEPS_CURRENT_ROUND", 1)))

    def aggregate_model(self) -> FLModel:
        order = np.argsort(np.stack(self.models), axis=0)
        stacked = np.take_along_axis(np.stack(self.models), order, axis=0)
        weights = np.asarray(self.samples)[order]
        n = len(self.models)
        kept, kept_weights = stacked[self.trim : n - self.trim], weights[self.trim : n - self.trim]
        self.info(f"trimmed mean over {len(kept)} of {n} site models")
        return FLModel(params={"numpy_key": np.average(kept, axis=0, weights=kept_weights)})

    def reset_stats(self):
        self.models = []
        self.samples = []
