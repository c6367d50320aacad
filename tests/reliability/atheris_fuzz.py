"""Coverage-guided fuzzing (atheris, i.e. libFuzzer) of the decoders in fuzzing.py:

    python -m tests.reliability.atheris_fuzz TARGET|all [libFuzzer flags: -max_total_time=60]

`all` lets the input's first byte pick the decoder, so one short run covers every one.
Any exception but DecodeError, an input slower than fuzzing.MAX_SECONDS, or one whose peak RSS
or address space (the kernel's count, as in sandbox.py) passes its bound is a crash. Coverage is
collected in this process, so inputs are measured here too, without sandbox.py's fresh forks:
small blocks an earlier input freed may be reused unseen (run it with
fuzzing.MALLOC_ENVIRONMENT so that big ones cannot). RLIMIT_AS caps the process at
fuzzing.CEILING above its start; libFuzzer's -rss_limit_mb and -timeout add their own limits.
Run by tests/reliability/test_atheris.py.
"""

from __future__ import annotations

import resource
import sys

import atheris

# Our code only: instrumenting every loaded module (numpy included) takes half a minute.
with atheris.instrument_imports(
    include=["core", "transport", "cursor", "deletion", "ledger_janitor", "config"]
):
    from tests.reliability.fuzzing import CEILING, TARGETS, Memory, Target, measure, violations

from tests.reliability.faulty_decoders import FAULTY  # for the harness's own test


def _pick(name: str) -> tuple[list[Target], int]:
    """The targets an input may go to, and how many leading bytes choose among them."""
    if name == "all":
        return [TARGETS[key] for key in sorted(TARGETS)], 1
    return [{**TARGETS, **FAULTY}[name]], 0


def main() -> None:
    targets, prefix = _pick(sys.argv[1])

    def one_input(data: bytes) -> None:
        if len(data) < prefix:
            return
        target = targets[data[0] % len(targets)] if prefix else targets[0]
        payload = data[prefix:]
        found = violations(target, payload, measure(target, payload))
        if found:
            raise AssertionError("\n".join(found))

    ceiling = Memory.now().reserved + CEILING
    resource.setrlimit(resource.RLIMIT_AS, (ceiling, ceiling))
    atheris.Setup([sys.argv[0], *sys.argv[2:]], one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
