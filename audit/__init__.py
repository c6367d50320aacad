"""The orphan-ledger audit: find ledgers no Pulsar metadata references, on Spark.

Layout: `schema` (the DataFrame shapes), `attribution` and `transform` (pure DataFrame
functions), `ledger_scan`, `reference_scan`, `pulsar_refs` and `files` (IO), `enqueue`
(phase one), `pipeline` (one audit run; `input_check` and `json_lines` refuse a malformed
input), `report` (the console's), `report_data`, `report_summary`, `report_orphans`,
`svg_chart` and `html_report` (the HTML page), `metrics_file` (Prometheus text format), `run`
(the `audit` command's body). Tiered storage and the
missing-data report: the `offload_*` modules (`offload_audit` ties them together). Only this
package imports PySpark; `ledger_janitor.audit_cli` imports it lazily, so registering the
command costs nothing.
"""
