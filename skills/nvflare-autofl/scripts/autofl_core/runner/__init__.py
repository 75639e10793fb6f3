"""The Auto-FL campaign runner's modules: one lifecycle action or one campaign file per module.

`run_job_campaign.py` is the thin CLI; `actions.dispatch` runs one action under the workspace lock.
"""
