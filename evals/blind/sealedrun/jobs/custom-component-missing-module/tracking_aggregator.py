"""Server-side mean aggregator that also logs each round's mean site accuracy to MLflow."""

import numpy as np
from nvflare.app_common.abstract.fl_model import FLModel
from nvflare.app_common.aggregators.model_aggregator import ModelAggregator


class TrackingAggregator(ModelAggregator):
    def __init__(self, experiment="fl-numpy"):
        super().__init__()
        self.experiment = experiment
        self.models, self.accuracies = [], []
        self.round = 0

    def accept_model(self, model: FLModel):
        self.models.append(np.asarray(model.params["numpy_key"], dtype=float))
        self.accuracies.append(float(model.metrics.get("accuracy", 0.0)))

    def aggregate_model(self) -> FLModel:
        import mlflow  # imported here so job.py builds without it; every site's server needs it at run time

        mlflow.set_experiment(self.experiment)
        mlflow.log_metric("mean_site_accuracy", float(np.mean(self.accuracies)), step=self.round)
        self.round += 1
        return FLModel(params={"numpy_key": np.mean(self.models, axis=0)})

    def reset_stats(self):
        self.models, self.accuracies = [], []
