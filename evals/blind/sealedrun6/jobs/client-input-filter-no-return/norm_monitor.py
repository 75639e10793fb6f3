"""Client-side task data filter: logs the norm of the global model each site receives (a drift monitor)."""

import numpy as np
from nvflare.apis.dxo import from_shareable
from nvflare.apis.filter import Filter
from nvflare.apis.fl_context import FLContext
from nvflare.apis.shareable import Shareable


class GlobalNormMonitor(Filter):
    def __init__(self, warn_above: float = 10.0):
        super().__init__()
        self.warn_above = warn_above

    def process(self, shareable: Shareable, fl_ctx: FLContext) -> Shareable:
        dxo = from_shareable(shareable)
        norm = float(np.sqrt(sum(float(np.sum(np.square(v))) for v in dxo.data.values())))
        if norm > self.warn_above:
            self.log_warning(fl_ctx, f"global model norm {norm:.3f} above {self.warn_above}")
        else:
            self.log_info(fl_ctx, f"global model norm {norm:.3f}")
