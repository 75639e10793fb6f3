"""Server-side workflow: a FedAvg loop written with ModelController over a fixed list of sites (send, weighted average, save)."""

import numpy as np
from nvflare.app_common.abstract.fl_model import FLModel
from nvflare.app_common.workflows.model_controller import ModelController


class WeightedLoop(ModelController):
    def __init__(self, sites: list, num_rounds: int = 3, persistor_id: str = "persistor"):
        super().__init__(persistor_id=persistor_id)
        self.sites = sites
        self.num_rounds = num_rounds

    def run(self):
        model = self.load_model()
        for current_round in range(self.num_rounds):
            self.info(f"Round {current_round} started.")
            results = self.send_model_and_wait(task_name="train", data=model, targets=self.sites)
            weights = np.array([r.meta.get("NUM_STEPS_CURRENT_ROUND", 1) for r in results], dtype=float)
            stacked = np.stack([np.asarray(r.params["numpy_key"], dtype=float) for r in results])
            avg = (weights[:, None] * stacked).sum(axis=0) / weights.sum()
            model = FLModel(params={"numpy_key": avg}, current_round=current_round)
            self.save_model(model)
        self.info("Finished.")
