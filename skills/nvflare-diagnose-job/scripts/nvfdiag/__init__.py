"""Private modules of the nvflare-diagnose-job skill (loaded by file path from diagnose_job.py)."""
