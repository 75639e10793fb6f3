"""autofl_report.md and autofl_report.json (imports nothing).

- `build` - gather the campaign's facts into the report document and write both files;
- `run_records` - what the runs' own records say: budget verification, the latest trial, the wall time;
- `facts` - pure facts from the ledger: improvements, discards, literature and family outcomes, trajectory;
- `curves` - the runs whose metric per round the plot shows (from their round records), in words too;
- `warning_rules` - what should make a reviewer doubt the selected result (pure);
- `score_provenance` - where the score comes from; measured vs job-reported per trial, metric divergences;
- `markdown` - the human report from the document;
- `safe_text` - recorded strings as markdown that cannot change the report's structure;
- `gate` - the final report's shell: lock, refusal rules, output checks (the `report` action, campaign_report.py).
"""
