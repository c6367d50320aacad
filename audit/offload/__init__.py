"""The tiered-storage audit (offloaded ledgers) and the missing-data report.

`tiered` ties it together (listing, classifying, writing), `targets` (the offload storage the
worker is configured with), `scan` (listing on Spark) over `objects` (one share of the
listing) and `evidence` (whose an object is), `classify` (pure DataFrame arithmetic),
`verify` (looking again on the driver), `enqueue` (phase one for orphaned copies), `report`
(what the console prints).
"""
