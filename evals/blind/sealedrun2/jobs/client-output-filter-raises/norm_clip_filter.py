"""Client-side result filter that clips the norm of the weights a site sends back."""

import numpy as np
from nvflare.apis.dxo import from_shareable
from nvflare.apis.filter import Filter


class NormClipFilter(Filter):
    def __init__(self, max_norm: float = 5.0):
        super().__init__()
        self.max_norm = max_norm

    def process(self, shareable, fl_ctx):
        dxo = from_shareable(shareable)
        weights = dxo.data["weights"]
        norm = float(np.linalg.norm(weights))
        if norm > self.max_norm:
            dxo.data["weights"] = weights * (self.max_norm / norm)
        return dxo.update_shareable(shareable)
