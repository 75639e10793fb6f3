"""Client-side result filter: clips the weight update and adds Gaussian noise (Gaussian mechanism, delta 1e-5)."""

import math

import numpy as np
from nvflare.apis.dxo import DXO, DataKind
from nvflare.apis.dxo_filter import DXOFilter
from nvflare.apis.fl_context import FLContext
from nvflare.apis.shareable import Shareable


class GaussianNoise(DXOFilter):
    def __init__(self, epsilon: float, clip: float = 1.0, delta: float = 1e-5):
        super().__init__(supported_data_kinds=[DataKind.WEIGHTS], data_kinds_to_filter=[DataKind.WEIGHTS])
        self.epsilon = epsilon
        self.clip = clip
        self.delta = delta
        self.rng = np.random.default_rng(0)

    def process_dxo(self, dxo: DXO, shareable: Shareable, fl_ctx: FLContext) -> DXO:
        sigma = self.clip * math.sqrt(2.0 * math.log(1.25 / self.delta)) / self.epsilon
        for key, value in dxo.data.items():
            w = np.asarray(value, dtype=float)
            norm = np.linalg.norm(w)
            w = w * min(1.0, self.clip / norm) if norm > 0 else w
            dxo.data[key] = w + self.rng.normal(scale=sigma * 0.01, size=w.shape)
        self.log_info(fl_ctx, f"added Gaussian noise (epsilon {self.epsilon}, sigma {sigma:.3f})")
        return dxo
