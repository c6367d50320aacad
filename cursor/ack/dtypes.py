"""The numpy array types ack state and the wire formats share (entry ids, ledger ids, words)."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

U8 = NDArray[np.uint8]
U64 = NDArray[np.uint64]
I64 = NDArray[np.int64]
