"""Coverage-guided fuzzing (atheris, i.e. libFuzzer) of one decoder from fuzzing.py:

    python -m tests.reliability.atheris_fuzz TARGET [libFuzzer flags, e.g. -max_total_time=60]

Any exception but DecodeError, an input slower than fuzzing.MAX_SECONDS or one that allocates
past the target's bound is a crash; libFuzzer's -rss_limit_mb and -timeout add hard limits.
The long test suite runs every target (tests/reliability/test_atheris.py).
"""

from __future__ import annotations

import sys

import atheris

from tests.reliability.fuzzing import TARGETS, check

atheris.instrument_all()  # every Python function loaded so far: ours and our dependencies


def main() -> None:
    target = TARGETS[sys.argv[1]]

    def one_input(data: bytes) -> None:
        check(target, data)

    atheris.Setup([sys.argv[0], *sys.argv[2:]], one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
