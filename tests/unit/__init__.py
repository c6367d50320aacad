"""Pure logic, no server: decisions, codecs, names, the handler over fakes."""
