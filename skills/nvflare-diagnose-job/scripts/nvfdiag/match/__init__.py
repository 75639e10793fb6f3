"""Stage 2, match: Evidence + the failure catalog -> an Analysis (which row, how sure, which sites are hidden). Pure.

matcher     analyse(): the order of the rules; partial visibility, the sites a symptom depends on, confidence
catalog     load and validate the rendered catalog (references/failure_patterns.json); regexes compiled once
messages    NVFLARE's own error messages (references/nvflare_messages.json) and finding them in text
scan        one pass over the lines: catalog signal hits, text mode hints, status markers
tracebacks  Python tracebacks and whether they pass through user code
jobframes   which frames are surely the job's own code (its app custom folder, job.py, a script the evidence names)
calibration  evidence too thin for high: unsure job code, one bare line or one record of generic words, another run's
raiser      who raised it decides: the raising frame, the caller chain, NVFLARE's messages, wrappers
refine      hits -> ranked candidates: the catalog's refinement rules and the precedence
mode        simulation, production (POC included) or ambiguous
actions     a row's next-action texts per runtime mode and fact, and their placeholders
usercalls   the catalog's user_calls table: NVFLARE's internal names -> the job.py call the user wrote
rounds      rounds that completed before a failure (round banners, metrics)
datapaths   an absolute path is not the cause when the same root works (ABSOLUTE_DATA_PATH vs DATA_PATH_NOT_FOUND)
downstream  NVFLARE's server-side reactions to a client's failure are consequences, not causes
ended       a client script that ended without sending and raised nothing (its whole console output shows it)
attribution  which site a signal belongs to (its label, else the site its text or traceback names)
foreign_tracebacks  hits a traceback's frames say do not carry their row's meaning are loose (catalog flags)
exits       process exits read once as numbers with their encodings (-9, 128+9, 256-9, SIGKILL, Killed, OOMKilled)
dissent     evidence that disagrees with itself: a message's exception class against the row its message points at
releases    a class or module under nvflare. that the release which ran the job lacks (a job for another release)
careful     what a careful reader sets aside before ranking (the three modules below)
handled     a traceback the job's script caught and went past does not decide the row
launches    a FileNotFoundError from Python's process launcher names a missing program, not a data path
waits       a CLI envelope whose wait ran out (TIMEOUT) supports no row; the scheduler's reason is said
"""
