"""Phase two: the shared-subscription worker, reconsume-later and the archive."""
