"""Client-side component: writes one audit line per finished task (round, samples used) to the site's log."""

from nvflare.apis.dxo import from_shareable
from nvflare.apis.event_type import EventType
from nvflare.apis.fl_component import FLComponent
from nvflare.apis.fl_constant import FLContextKey
from nvflare.apis.fl_context import FLContext


class TaskAudit(FLComponent):
    def handle_event(self, event_type: str, fl_ctx: FLContext):
        if event_type != EventType.AFTER_TASK_EXECUTION:
            return
        result = fl_ctx.get_prop(FLContextKey.TASK_RESULT)
        dxo = from_shareable(result)
        samples = dxo.meta["NUM_SAMPLES"]
        self.log_info(fl_ctx, f"audit: task {fl_ctx.get_prop(FLContextKey.TASK_NAME)} used {samples} samples")
