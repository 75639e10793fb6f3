"""Server-side aggregator: the coordinate-wise median of the sites' weights (robust to one bad site)."""

import numpy as np
from nvflare.app_common.abstract.fl_model import FLModel
from nvflare.app_common.aggregators.model_aggregator import ModelAggregator


class MedianAggregator(ModelAggregator):
    def __init__(self):
        super().__init__()
        self.models = []

    def accept_model(self, model: FLModel):
        self.models.append(np.asarray(model.params["numpy_key"], dtype=float))

    def aggregate_model(self) -> FLModel:
        return FLModel(params={"numpy_key": np.median(np.stack(self.models), axis=0)})

    def reset_stats(self):
        self.models = []
