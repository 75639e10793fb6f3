"""Stage 3, report: an Analysis (match/matcher.py) -> the report dict -> JSON or markdown text.

assemble  the report dict (schema nvflare.diagnose.report.v1): signals, likely cause, next action, size caps
advice    missing_evidence and follow_up_commands: fixed sentences and catalog templates, never log text
render    JSON and markdown rendering, and `excerpt`: the one rule for quoting evidence text
"""
