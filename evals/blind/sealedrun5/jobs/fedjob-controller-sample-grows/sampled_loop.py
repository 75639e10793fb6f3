"""Server-side workflow: FedAvg over a random subset of the clients that grows by one client per round."""

import random

import numpy as np
from nvflare.app_common.abstract.fl_model import FLModel
from nvflare.app_common.workflows.model_controller import ModelController


class SampledLoop(ModelController):
    def __init__(self, num_rounds: int = 4, start_clients: int = 1, persistor_id: str = "persistor"):
        super().__init__(persistor_id=persistor_id)
        self.num_rounds = num_rounds
        self.start_clients = start_clients

    def run(self):
        model = self.load_model()
        clients = [c.name for c in self.engine.get_clients()]
        rng = random.Random(0)
        for current_round in range(self.num_rounds):
            self.info(f"Round {current_round} started.")
            targets = rng.sample(clients, self.start_clients + current_round)
            model.current_round = current_round
            results = self.send_model_and_wait(task_name="train", data=model, targets=targets)
            weights = np.array([r.meta.get("NUM_STEPS_CURRENT_ROUND", 1) for r in results], dtype=float)
            stacked = np.stack([np.asarray(r.params["numpy_key"], dtype=float) for r in results])
            avg = (weights[:, None] * stacked).sum(axis=0) / weights.sum()
            model = FLModel(params={"numpy_key": avg}, current_round=current_round)
            self.save_model(model)
            self.info(f"Round {current_round} aggregated {len(results)} of {len(targets)} results.")
        self.info("Finished.")
