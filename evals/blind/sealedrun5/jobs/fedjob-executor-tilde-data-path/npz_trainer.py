"""Client-side executor: loads the site's arrays from <data_root>/<site>.npz and trains a logistic regression on
them for each train task."""

import os

import numpy as np
from nvflare.apis.dxo import DXO, DataKind, MetaKey, from_shareable
from nvflare.apis.event_type import EventType
from nvflare.apis.executor import Executor
from nvflare.apis.fl_constant import ReturnCode
from nvflare.apis.fl_context import FLContext
from nvflare.apis.shareable import Shareable, make_reply
from nvflare.apis.signal import Signal


class NpzTrainer(Executor):
    def __init__(self, data_root: str, lr: float = 0.1, steps: int = 5):
        super().__init__()
        self.data_root = data_root
        self.lr = lr
        self.steps = steps
        self.x = None
        self.y = None

    def handle_event(self, event_type: str, fl_ctx: FLContext):
        if event_type == EventType.START_RUN:
            path = os.path.join(self.data_root, f"{fl_ctx.get_identity_name()}.npz")
            with np.load(path) as data:
                self.x, self.y = data["x"], data["y"]
            self.log_info(fl_ctx, f"loaded {len(self.y)} rows from {path}")

    def execute(self, task_name: str, shareable: Shareable, fl_ctx: FLContext, abort_signal: Signal) -> Shareable:
        if task_name != "train":
            return make_reply(ReturnCode.TASK_UNKNOWN)
        x, y = self.x, self.y
        w = np.asarray(from_shareable(shareable).data["numpy_key"], dtype=float)
        acc = float(np.mean(((x @ w) > 0).astype(float) == y))
        for _ in range(self.steps):
            p = 1.0 / (1.0 + np.exp(-(x @ w)))
            w = w - self.lr * x.T @ (p - y) / len(y)
        self.log_info(fl_ctx, f"accuracy before training {acc:.3f}")
        meta = {MetaKey.NUM_STEPS_CURRENT_ROUND: len(y)}
        return DXO(data_kind=DataKind.WEIGHTS, data={"numpy_key": w}, meta=meta).to_shareable()
