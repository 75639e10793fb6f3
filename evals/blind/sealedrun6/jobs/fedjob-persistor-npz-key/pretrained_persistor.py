"""Server-side persistor: starts from the centrally pre-trained weights (an .npz file) and saves each global model."""

import os

import numpy as np
from nvflare.apis.fl_context import FLContext
from nvflare.app_common.abstract.model import ModelLearnable, ModelLearnableKey, make_model_learnable
from nvflare.app_common.abstract.model_persistor import ModelPersistor


class PretrainedPersistor(ModelPersistor):
    def __init__(self, pretrained_path: str, save_name: str = "global_model.npy"):
        super().__init__()
        self.pretrained_path = pretrained_path
        self.save_name = save_name

    def load_model(self, fl_ctx: FLContext) -> ModelLearnable:
        with np.load(self.pretrained_path) as archive:
            weights = np.asarray(archive["weights"], dtype=np.float32)
        self.log_info(fl_ctx, f"starting from the pre-trained weights in {self.pretrained_path}")
        return make_model_learnable(weights={"numpy_key": weights}, meta_props={})

    def save_model(self, model_learnable: ModelLearnable, fl_ctx: FLContext):
        run_dir = fl_ctx.get_engine().get_workspace().get_run_dir(fl_ctx.get_job_id())
        np.save(os.path.join(run_dir, self.save_name), model_learnable[ModelLearnableKey.WEIGHTS]["numpy_key"])
