"""The filesystem offloader's MapFile, against Hadoop itself (the Hadoop jars pyspark ships).

Hadoop's MapFile.Writer writes what FileSystemManagedLedgerOffloader writes - the ledger
metadata at key -1, then the entries - with Pulsar's shipped filesystem_offload_core_site.xml;
our reader must find the metadata in it, and our fixture writer must produce the same bytes.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from core.errors import DecodeError
from deletion.wire import mapfile
from deletion.wire.proto.bookkeeper_formats_pb2 import LedgerMetadataFormat
from harness.offload_objects import base_metadata, ledger_metadata, offloaded_mapfile
from harness.offload_objects import mapfile as fixture_mapfile

# conf/filesystem_offload_core_site.xml, as shipped with Pulsar.
PULSAR_CORE_SITE = {
    "io.file.buffer.size": "4096",
    "io.seqfile.compress.blocksize": "1000000",
    "io.seqfile.compression.type": "BLOCK",
    "io.map.index.interval": "128",
}
ML_NAME = "tenant/ns/persistent/a%20b"


@pytest.fixture(scope="module")
def jvm() -> Iterator[Any]:
    from pyspark.java_gateway import launch_gateway

    gateway = launch_gateway()  # type: ignore[no-untyped-call]
    try:
        yield gateway
    finally:
        gateway.shutdown()
        # The JVM exits when its stdin closes.
        gateway.proc.stdin.close()
        gateway.proc.wait(timeout=60)


def hadoop_mapfile(gateway: Any, path: Path, records: list[tuple[int, bytes]], **conf: str) -> None:
    """What LedgerReader.run does: MapFile.Writer(configuration, path, keyClass, valueClass)."""
    jvm = gateway.jvm
    configuration = jvm.org.apache.hadoop.conf.Configuration()
    for key, value in conf.items():
        configuration.set(key, value)
    writer_class = jvm.org.apache.hadoop.io.MapFile.Writer
    options = gateway.new_array(jvm.org.apache.hadoop.io.SequenceFile.Writer.Option, 2)
    options[0] = writer_class.keyClass(jvm.java.lang.Class.forName(mapfile.LONG_WRITABLE))
    options[1] = writer_class.valueClass(jvm.java.lang.Class.forName(mapfile.BYTES_WRITABLE))
    writer = writer_class(configuration, jvm.org.apache.hadoop.fs.Path(str(path)), options)
    key, value = jvm.org.apache.hadoop.io.LongWritable(), jvm.org.apache.hadoop.io.BytesWritable()
    for record_key, record_value in records:
        key.set(record_key)
        value.set(bytearray(record_value), 0, len(record_value))
        writer.append(key, value)
    writer.close()


def sync_marker(sequence_file: bytes) -> bytes:
    """The 16 bytes that end a DefaultCodec SequenceFile's header (no header metadata)."""
    end = sequence_file.index(mapfile.DEFAULT_CODEC.encode()) + len(mapfile.DEFAULT_CODEC) + 4
    return sequence_file[end : end + mapfile.SYNC_SIZE]


METADATA = ledger_metadata(base_metadata(ML_NAME))
RECORDS = [(-1, METADATA)] + [(i, b"entry-%d" % i) for i in range(300)]


def test_fixtures_are_byte_for_byte_what_hadoop_writes(jvm: Any, tmp_path: Path) -> None:
    hadoop_mapfile(jvm, tmp_path / "real", RECORDS, **PULSAR_CORE_SITE)
    real = {p.name: p.read_bytes() for p in (tmp_path / "real").iterdir()}
    assert sorted(real) == [".data.crc", ".index.crc", "data", "index"]
    # The sync markers are random: ours are fixed, so take Hadoop's to compare.
    syncs = (sync_marker(real["data"]), sync_marker(real["index"]))
    assert fixture_mapfile(RECORDS, syncs) == real
    assert offloaded_mapfile(METADATA, entries=300).keys() == real.keys()


@pytest.mark.parametrize("compression", ["BLOCK", "RECORD", "NONE"])
def test_reader_finds_the_metadata_hadoop_wrote(jvm: Any, tmp_path: Path, compression: str) -> None:
    conf = dict(PULSAR_CORE_SITE, **{"io.seqfile.compression.type": compression})
    hadoop_mapfile(jvm, tmp_path / "ledger", RECORDS, **conf)
    with open(tmp_path / "ledger" / "data", "rb") as stream:
        found = mapfile.ledger_metadata(stream)
    expected = LedgerMetadataFormat()
    expected.ParseFromString(METADATA)
    assert found == expected
    assert {e.key: e.value for e in found.customMetadata}["pulsar/managed-ledger"] == (
        ML_NAME.encode()
    )


def test_a_first_key_other_than_minus_one_is_not_metadata(jvm: Any, tmp_path: Path) -> None:
    hadoop_mapfile(jvm, tmp_path / "ledger", RECORDS[1:], **PULSAR_CORE_SITE)
    with (
        open(tmp_path / "ledger" / "data", "rb") as stream,
        pytest.raises(DecodeError, match="first key is 0"),
    ):
        mapfile.ledger_metadata(stream)
