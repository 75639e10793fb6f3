"""Stage 2, match: Evidence + the failure catalog -> an Analysis (which row, how sure, which sites are hidden). Pure.

matcher     analyse(): the order of the rules; partial visibility, the sites a symptom depends on, confidence
catalog     load and validate the rendered catalog (references/failure_patterns.json); regexes compiled once
messages    NVFLARE's own error messages (references/nvflare_messages.json) and finding them in text
scan        one pass over the lines: catalog signal hits, text mode hints, status markers
tracebacks  Python tracebacks and whether they pass through user code
raiser      who raised it decides: the raising frame, the caller chain, NVFLARE's messages, wrappers
refine      hits -> ranked candidates: the catalog's refinement rules and the precedence
mode        simulation, production (POC included) or ambiguous
"""
