"""Client-side executor: one Newton step of logistic regression on the site's data per train task; a failed step
is reported to the server as an execution exception."""

import numpy as np
from nvflare.apis.dxo import DXO, DataKind, MetaKey, from_shareable
from nvflare.apis.executor import Executor
from nvflare.apis.fl_constant import ReturnCode
from nvflare.apis.fl_context import FLContext
from nvflare.apis.shareable import Shareable, make_reply
from nvflare.apis.signal import Signal

NUM_FEATURES = 8
TRUE_W = np.linspace(-1.0, 1.0, NUM_FEATURES + 1)


class NewtonTrainer(Executor):
    def __init__(self, ridge: float = 0.0):
        super().__init__()
        self.ridge = ridge

    def _site_data(self, site_name, n=600):
        rng = np.random.default_rng(sum(ord(c) for c in site_name))
        x = np.hstack([rng.normal(size=(n, NUM_FEATURES)), np.ones((n, 1))])
        if site_name == "site-2":
            x[:, 4] = x[:, 3]  # this site's export repeats the blood pressure column
        y = (x @ TRUE_W + rng.normal(scale=0.5, size=n) > 0).astype(float)
        return x, y

    def _newton_step(self, w, x, y):
        p = 1.0 / (1.0 + np.exp(-(x @ w)))
        hessian = x.T @ (x * (p * (1 - p))[:, None]) + self.ridge * np.eye(len(w))
        return w - np.linalg.solve(hessian, x.T @ (p - y))

    def execute(self, task_name: str, shareable: Shareable, fl_ctx: FLContext, abort_signal: Signal) -> Shareable:
        if task_name != "train":
            return make_reply(ReturnCode.TASK_UNKNOWN)
        try:
            x, y = self._site_data(fl_ctx.get_identity_name())
            w = np.asarray(from_shareable(shareable).data["numpy_key"], dtype=float)
            acc = float(np.mean(((x @ w) > 0).astype(float) == y))
            w = self._newton_step(w, x, y)
        except Exception as e:
            self.log_error(fl_ctx, f"local training failed: {e}")
            return make_reply(ReturnCode.EXECUTION_EXCEPTION)
        self.log_info(fl_ctx, f"accuracy before training {acc:.3f}")
        meta = {MetaKey.NUM_STEPS_CURRENT_ROUND: len(y)}
        return DXO(data_kind=DataKind.WEIGHTS, data={"numpy_key": w}, meta=meta).to_shareable()
