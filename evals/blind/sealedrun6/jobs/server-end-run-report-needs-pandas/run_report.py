"""Server-side component: times each round and writes a round table (round_report.csv) when the run ends."""

import time

from nvflare.apis.event_type import EventType
from nvflare.apis.fl_component import FLComponent
from nvflare.apis.fl_context import FLContext
from nvflare.app_common.app_constant import AppConstants
from nvflare.app_common.app_event_type import AppEventType


class RunReport(FLComponent):
    def __init__(self):
        super().__init__()
        self.rows = []
        self.started = None

    def handle_event(self, event_type: str, fl_ctx: FLContext):
        if event_type == AppEventType.ROUND_STARTED:
            self.started = time.time()
        elif event_type == AppEventType.ROUND_DONE and self.started is not None:
            current_round = fl_ctx.get_prop(AppConstants.CURRENT_ROUND)
            self.rows.append({"round": current_round, "seconds": round(time.time() - self.started, 3)})
            self.log_info(fl_ctx, f"round {current_round} took {self.rows[-1]['seconds']} s")
        elif event_type == EventType.END_RUN:
            self.write_report(fl_ctx)

    def write_report(self, fl_ctx: FLContext):
        import pandas as pd

        pd.DataFrame(self.rows).to_csv("round_report.csv", index=False)
        self.log_info(fl_ctx, f"wrote round_report.csv ({len(self.rows)} rounds)")
