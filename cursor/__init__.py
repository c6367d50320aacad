"""Cursor acknowledgment state and its chunked persistence (grows with the cursor-state work)."""
