"""Server-side filter that clips each client's update to a maximum distance from the current global model."""

import numpy as np
from nvflare.apis.dxo import from_shareable
from nvflare.apis.filter import Filter
from nvflare.app_common.app_constant import AppConstants


class UpdateClipFilter(Filter):
    def __init__(self, max_norm: float = 5.0):
        super().__init__()
        self.max_norm = max_norm

    def process(self, shareable, fl_ctx):
        dxo = from_shareable(shareable)
        global_weights = fl_ctx.get_prop(AppConstants.GLOBAL_MODEL).get("numpy_key")
        for key, value in dxo.data.items():
            update = np.asarray(value) - global_weights
            norm = float(np.linalg.norm(update))
            if norm > self.max_norm:
                dxo.data[key] = global_weights + update * (self.max_norm / norm)
        return dxo.update_shareable(shareable)
