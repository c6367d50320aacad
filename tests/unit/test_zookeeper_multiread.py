"""multiRead's bytes, written out from ZooKeeper's jute definitions (zookeeper.jute:
MultiHeader {int type; boolean done; int err}, GetDataRequest {ustring path; boolean watch},
GetDataResponse {buffer data; Stat stat}, ErrorResponse {int err}, Stat's eleven fields),
not from kazoo's helpers the module is built on. The real server reads and answers them in
tests/integration/test_zookeeper_stream.py."""

from __future__ import annotations

import struct

from kazoo.exceptions import NoAuthError, NoNodeError

from deletion.adapters.stores.zookeeper_multiread import MultiRead
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
