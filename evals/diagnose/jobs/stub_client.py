"""Placeholder training script, copied as client.py into jobs that have none: they fail before any client runs."""

import nvflare.client as flare

flare.init()
while flare.is_running():
    flare.send(flare.receive())
