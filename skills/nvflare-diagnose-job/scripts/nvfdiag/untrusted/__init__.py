"""Beside the pipeline, untrusted: find evidence lines that try to direct the reader; they never count as signals.

The matcher runs this scan first (match/matcher.py) and skips every flagged line; the report lists the findings
(`suspicious_content`) in fixed phrases and quotes log text only defanged.

injection  scan_lines / scan_suspicious: findings and flagged line indexes; defang (URLs, IPs made inert)
normalize  the matching view of a line: NFKC, invisible characters, homoglyphs, embedded encodings undone
rules      the directive rules: one list of gated regular expressions per family
gates      the few lines whose words can open a rule's gates (the only ones scanned in full)
"""
