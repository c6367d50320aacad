"""multiRead's bytes, written out from ZooKeeper's jute definitions (zookeeper.jute:
MultiHeader {int type; boolean done; int err}, GetDataRequest {ustring path; boolean watch},
GetDataResponse {buffer data; Stat stat}, ErrorResponse {int err}, Stat's eleven fields),
not from kazoo's helpers the module is built on. The real server reads and answers them in
tests/integration/test_zookeeper_stream.py."""

from __future__ import annotations

import struct
from typing import cast

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError, NoNodeError
from kazoo.protocol.paths import _prefix_root, normpath

from deletion.adapters.stores.zookeeper_multiread import MultiRead, RequestFailedError, chrooted
from deletion.domain.ports import Stat

STAT = (11, 12, 1_700_000_000_000, 1_700_000_000_001, 3, 0, 0, 0, 2, 0, 13)


def _stat_bytes() -> bytes:
    # czxid, mzxid, ctime, mtime: long; version, cversion, aversion: int; ephemeralOwner:
    # long; dataLength, numChildren: int; pzxid: long
    return struct.pack(">qqqqiiiqiiq", *STAT)


def test_a_request_is_a_get_data_per_path_then_the_end_header() -> None:
    expected = bytes.fromhex(
        "00000004" "00" "ffffffff" "00000002" "2f61" "00"  # getData("/a", no watch)
        "00000004" "00" "ffffffff" "00000003" "2f6263" "00"  # getData("/bc")
        "ffffffff" "01" "ffffffff"  # done
    )  # fmt: skip
    assert MultiRead(["/a", "/bc"]).serialize() == expected
    assert MultiRead.type == 22


def test_a_reply_gives_each_read_its_data_or_its_error() -> None:
    reply = (
        b"\x00\x00\x00\x00"  # bytes of the reply header, skipped by the offset
        + struct.pack(">i?i", 4, False, 0) + struct.pack(">i", 2) + b"hi" + _stat_bytes()
        + struct.pack(">i?i", -1, False, -101) + struct.pack(">i", -101)  # NONODE
        + struct.pack(">i?i", 4, False, 0) + struct.pack(">i", -1) + _stat_bytes()  # null data
        + struct.pack(">i?i", -1, False, -102) + struct.pack(">i", -102)  # NOAUTH
        + struct.pack(">i?i", -1, True, -1)
    )  # fmt: skip
    first, missing, empty, refused = MultiRead.deserialize(reply, 4)
    assert not isinstance(first, Exception) and not isinstance(empty, Exception)
    assert first.data == b"hi"
    assert first.stat == Stat(version=3, ctime_ms=STAT[2], mtime_ms=STAT[3])
    assert empty.data == b""
    assert isinstance(missing, NoNodeError) and isinstance(refused, NoAuthError)


def test_an_empty_reply_has_no_reads() -> None:
    assert MultiRead.deserialize(struct.pack(">i?i", -1, True, -1), 0) == []


class _Client:
    def __init__(self, chroot: str) -> None:
        self.chroot = chroot


_PART = st.sampled_from(["", ".", "..", "...", ".x", "x.", "a", "L0001", "ü", "a b"])


# A chroot as a kazoo client holds one: normalized when it was made (`set_hosts`).
_CHROOT = st.lists(st.sampled_from(["", "a", "ü", "x.", "..."]), max_size=3).map(
    lambda parts: normpath("/".join(parts)) if any(parts) else ""
)


@given(_CHROOT, st.lists(_PART, max_size=5).map("/".join))
def test_paths_go_under_the_chroot_as_kazoo_puts_them(chroot: str, path: str) -> None:
    for path_form in (path, "/" + path, "/" + path + "/"):
        try:
            expected = _prefix_root(chroot, path_form)
        except ValueError:
            with pytest.raises(RequestFailedError):
                chrooted(cast(KazooClient, _Client(chroot)), [path_form])
            continue
        assert chrooted(cast(KazooClient, _Client(chroot)), [path_form]) == [expected]
