"""Static importer of an NVFLARE job.py into an Auto-FL campaign config (see api.py for the public API).

Never imports nvflare and never executes job.py: everything is read from the AST.
"""
