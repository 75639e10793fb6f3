"""Stage 1, read: bounded, read-only evidence -> `model.Evidence` (nothing is ever written).

evidence        entry point: files, folders, stdin, bundles, CLI envelopes -> Evidence; EvidenceError
walk            list a folder's evidence files in reading order (no file opened), site labels, layout hints
credentials     the name-only credential filter (decided before anything is opened)
budget          share the byte budget between files (pure)
bounded         read one file head + tail, bounded; binary sniffing, line splitting
middle          windows around errors in the unread middle of big logs
jsontext        the one JSON parser for evidence and reference files; JSON-lines log records -> lines
prefixes        peel line prefixes that are not NVFLARE's (docker, kubectl, journal, Flower, ANSI) (pure)
structured      CLI envelopes, JSON evidence bundles and job meta -> Evidence
cli_answers     what the job CLI's answers state: sites whose logs are absent, the job status (pure)
inspect_source  `nvflare agent inspect source` output -> evidence lines
metrics_files   metrics_summary.json / round_metrics.jsonl -> the report's metrics
job_folder      structural check of an exported job folder
jobscope        keep one job's lines of a log every job writes into (POC/production)
sites           site names, job ids, kit ids: the identifier rules every stage uses; sites and workspaces a line names
workspaces      SimEnv workspaces the stdout names that exist here but were not given
collect         --collect: the bounded read-only nvflare CLI commands (imported only for --collect)
"""
