"""Server-side workflow: a FedAvg loop written with ModelController whose train task times out after task_timeout."""

import numpy as np
from nvflare.app_common.abstract.fl_model import FLModel
from nvflare.app_common.workflows.model_controller import ModelController


class TimedLoop(ModelController):
    def __init__(self, num_rounds: int = 3, task_timeout: int = 30, persistor_id: str = "persistor"):
        super().__init__(persistor_id=persistor_id)
        self.num_rounds = num_rounds
        self.task_timeout = task_timeout

    def run(self):
        model = self.load_model()
        for current_round in range(self.num_rounds):
            self.info(f"Round {current_round} started.")
            model.current_round = current_round
            results = self.send_model_and_wait(task_name="train", data=model, timeout=self.task_timeout)
            if not results:
                self.warning(f"Round {current_round}: no results within {self.task_timeout} s, keeping the model")
                continue
            weights = np.array([r.meta.get("NUM_STEPS_CURRENT_ROUND", 1) for r in results], dtype=float)
            stacked = np.stack([np.asarray(r.params["numpy_key"], dtype=float) for r in results])
            avg = (weights[:, None] * stacked).sum(axis=0) / weights.sum()
            model = FLModel(params={"numpy_key": avg}, current_round=current_round)
            self.save_model(model)
        self.info("Finished.")
