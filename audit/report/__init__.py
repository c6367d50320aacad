"""What the operator reads of an audit: the console, the HTML page, the Prometheus text file.

`console` (the summary table and the missing-data alarm), `data` (the HTML report's content,
gathered from the Spark results) with `summary` and `orphans` (its sections), `page` (the
page rendered from `templates/report.html.j2`, package data) with `chart` (inline SVG bars),
`metrics` (Prometheus text format, for node_exporter's textfile collector).
"""
