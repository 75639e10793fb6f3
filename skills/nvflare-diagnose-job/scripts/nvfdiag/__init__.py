"""Private modules of the nvflare-diagnose-job skill (loaded by file path from diagnose_job.py).

The pipeline: diagnose_job.py (CLI) -> read/ -> match/ -> report/, with untrusted/ beside it (the matcher runs
it first and skips what it flags). A stage imports only the shared modules here and earlier stages.

read/        stage 1: bounded, read-only evidence -> model.Evidence
untrusted/   beside: lines that try to direct the reader (flagged, never signals; reported defanged)
match/       stage 2: Evidence + catalog -> an Analysis (the matched row, confidence, hidden sites)
report/      stage 3: Analysis -> report dict -> JSON or markdown
pipeline     diagnose(): match, then report; the one module that imports both
model        the records passed between stages: Source, Line, Evidence
textindex    all lines as one text, line shapes: finds the few lines worth a detailed look (untrusted, match)
regexfacts   literal text a regex cannot match without: a cheap test before the regex (untrusted, match)
logline      the NVFLARE log-line prefix rule: level, timestamp, message, record or continuation
pylines      the lines Python prints for a traceback: its start, the exception line, chaining sentences
"""
