"""Server-side workflow: FedAvg that also keeps the global model of the round with the best mean validation accuracy."""

import numpy as np
from nvflare.app_common.abstract.fl_model import FLModel
from nvflare.app_common.workflows.model_controller import ModelController


class BestModelLoop(ModelController):
    def __init__(self, num_rounds: int = 3, persistor_id: str = "persistor"):
        super().__init__(persistor_id=persistor_id)
        self.num_rounds = num_rounds

    def run(self):
        model = self.load_model()
        best = -1.0
        for current_round in range(self.num_rounds):
            self.info(f"Round {current_round} started.")
            model.current_round = current_round
            results = self.send_model_and_wait(task_name="train", data=model)
            weights = np.array([r.meta.get("NUM_STEPS_CURRENT_ROUND", 1) for r in results], dtype=float)
            stacked = np.stack([np.asarray(r.params["numpy_key"], dtype=float) for r in results])
            avg = (weights[:, None] * stacked).sum(axis=0) / weights.sum()
            score = float(np.mean([r.metrics["val_accuracy"] for r in results]))
            model = FLModel(params={"numpy_key": avg}, current_round=current_round)
            if score > best:
                best = score
                self.info(f"Round {current_round}: new best validation accuracy {score:.3f}")
                self.save_model(model)
        self.info("Finished.")
