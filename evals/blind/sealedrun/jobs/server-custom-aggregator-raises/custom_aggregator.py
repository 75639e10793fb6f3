"""Server-side aggregator that weights each site's model by the number of samples it reports."""

import numpy as np
from nvflare.app_common.abstract.fl_model import FLModel
from nvflare.app_common.aggregators.model_aggregator import ModelAggregator


class SampleWeightedAggregator(ModelAggregator):
    def __init__(self):
        super().__init__()
        self.models = []

    def accept_model(self, model: FLModel):
        n_samples = model.meta["num_samples"]
        self.models.append((n_samples, np.asarray(model.params["numpy_key"], dtype=float)))

    def aggregate_model(self) -> FLModel:
        total = sum(n for n, _ in self.models)
        weights = sum(n * w for n, w in self.models) / total
        return FLModel(params={"numpy_key": weights})

    def reset_stats(self):
        self.models = []
