"""Client-side executor: trains a logistic regression on the site's data for each train task."""

import numpy as np
from nvflare.apis.dxo import DXO, DataKind, MetaKey, from_shareable
from nvflare.apis.executor import Executor
from nvflare.apis.fl_constant import ReturnCode
from nvflare.apis.fl_context import FLContext
from nvflare.apis.shareable import Shareable, make_reply
from nvflare.apis.signal import Signal

NUM_FEATURES = 8
TRUE_W = np.linspace(-1.0, 1.0, NUM_FEATURES + 1)


class NPTrainer(Executor):
    def __init__(self, lr: float = 0.1, steps: int = 5):
        super().__init__()
        self.lr = lr
        self.steps = steps

    def _site_data(self, site_name, n=600):
        rng = np.random.default_rng(sum(ord(c) for c in site_name))
        x = np.hstack([rng.normal(size=(n, NUM_FEATURES)), np.ones((n, 1))])
        y = (x @ TRUE_W + rng.normal(scale=0.5, size=n) > 0).astype(float)
        return x, y

    def execute(self, task_name: str, shareable: Shareable, fl_ctx: FLContext, abort_signal: Signal) -> Shareable:
        if task_name != "train":
            return make_reply(ReturnCode.TASK_UNKNOWN)
        x, y = self._site_data(fl_ctx.get_identity_name())
        dxo = from_shareable(shareable)
        w = np.asarray(dxo.data["numpy_key"], dtype=float)
        acc = float(np.mean(((x @ w) > 0).astype(float) == y))
        for _ in range(self.steps):
            p = 1.0 / (1.0 + np.exp(-(x @ w)))
            w = w - self.lr * x.T @ (p - y) / len(y)
        self.log_info(fl_ctx, f"accuracy before training {acc:.3f}")
        return DXO(data_kind=DataKind.WEIGHTS, data={"numpy_key": w}, meta={MetaKey.NUM_STEPS_CURRENT_ROUND: len(y)})
