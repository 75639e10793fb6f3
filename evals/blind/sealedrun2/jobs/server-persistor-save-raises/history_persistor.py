"""NumPy persistor that also writes every saved global model to a JSON history file."""

import json
import os

from nvflare.app_common.abstract.model import ModelLearnableKey
from nvflare.app_common.np.np_model_persistor import NPModelPersistor


class HistoryPersistor(NPModelPersistor):
    def __init__(self, model=None, model_dir="models", model_name="server.npy", history_file="model_history.json"):
        super().__init__(model_dir=model_dir, model_name=model_name, model=model)
        self.history_file = history_file
        self.history = []

    def save_model(self, model_learnable, fl_ctx):
        super().save_model(model_learnable, fl_ctx)
        weights = model_learnable[ModelLearnableKey.WEIGHTS]["numpy_key"]
        self.history.append({"round": len(self.history), "weights": weights})
        run_dir = fl_ctx.get_engine().get_workspace().get_run_dir(fl_ctx.get_job_id())
        with open(os.path.join(run_dir, self.history_file), "w") as f:
            json.dump(self.history, f)
