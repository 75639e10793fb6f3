"""Server component that logs the time per round and an estimate of the time left."""

import time

from nvflare.apis.event_type import EventType
from nvflare.apis.fl_component import FLComponent
from nvflare.app_common.app_constant import AppConstants
from nvflare.app_common.app_event_type import AppEventType


class RoundTimer(FLComponent):
    def __init__(self, num_rounds: int):
        super().__init__()
        self.num_rounds = num_rounds
        self.started = None

    def handle_event(self, event_type, fl_ctx):
        if event_type == EventType.START_RUN:
            self.started = time.time()
        elif event_type == AppEventType.ROUND_STARTED:
            current_round = fl_ctx.get_prop(AppConstants.CURRENT_ROUND)
            per_round = (time.time() - self.started) / current_round
            left = per_round * (self.num_rounds - current_round)
            self.log_info(fl_ctx, f"round {current_round}: {per_round:.1f} s per round, about {left:.0f} s left")
