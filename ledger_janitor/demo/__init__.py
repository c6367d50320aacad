"""`ledger-janitor demo`: an embedded broker, seeded topics and a worker, nothing to set up."""
