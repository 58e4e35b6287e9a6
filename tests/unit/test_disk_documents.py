"""DiskDocuments reads a file into a buffer an earlier read left behind (no fresh allocation per read): the text must be
exactly what decoding the whole file gives, whatever was read before, however the file changes size
while it is read, and whichever thread reads it."""

from __future__ import annotations

import concurrent.futures
import os
import random
from pathlib import Path

import pytest

from lsp_agent.disk import documents as disk_documents
from lsp_agent.disk.documents import DiskDocuments

BITS = [b"a", b"\n", b"\r\n", "é".encode(), "€".encode(), "😀".encode(), b"\xff", b"\xe2\x82", b"\xf0\x9f"]


@pytest.fixture(autouse=True)
def no_spares(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(disk_documents, "_spares", [])


def random_bytes(rng: random.Random, most: int) -> bytes:
    # truncated sequences (b"\xe2\x82", b"\xf0\x9f") land mid-file and at the very end
    return b"".join(rng.choice(BITS) for _ in range(rng.randint(0, most)))


def test_each_file_is_its_own_bytes_decoded_whatever_was_read_before(tmp_path: Path) -> None:
    """Larger and smaller files in turn: a reused buffer's leftover bytes never reach a text."""
    rng = random.Random(7)
    docs = DiskDocuments(tmp_path)
    for n in range(300):
        data = random_bytes(rng, rng.choice([3, 20, 2000]))
        (tmp_path / f"{n}.txt").write_bytes(data)
        doc = docs.read_sync(f"{n}.txt")
        assert doc is not None and doc.text == data.decode("utf-8", "surrogateescape"), data
        assert doc.text.encode("utf-8", "surrogateescape") == data
    assert disk_documents._spares, "the buffer was not kept for the next read"


@pytest.mark.parametrize("reported", [0, 1, 5, 4095])
def test_a_file_longer_than_its_size_said_is_read_to_its_end(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                             reported: int) -> None:
    """A file that grew after fstat (or a /proc file, whose size says 0): the buffer grows."""
    data = "".join(f"line {i} é😀\n" for i in range(2000)).encode() + b"\xff"
    (tmp_path / "grown.txt").write_bytes(data)
    real_fstat = os.fstat

    def smaller(fd: int) -> os.stat_result:
        fields = list(real_fstat(fd))
        fields[6] = reported  # st_size
        return os.stat_result(fields)

    monkeypatch.setattr(os, "fstat", smaller)
    doc = DiskDocuments(tmp_path).read_sync("grown.txt")
    assert doc is not None and doc.text == data.decode("utf-8", "surrogateescape")


def test_a_file_shorter_than_its_size_said_is_what_it_holds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "shrunk.txt").write_bytes(b"short\n")
    real_fstat = os.fstat

    def larger(fd: int) -> os.stat_result:
        fields = list(real_fstat(fd))
        fields[6] = 1 << 20
        return os.stat_result(fields)

    monkeypatch.setattr(os, "fstat", larger)
    doc = DiskDocuments(tmp_path).read_sync("shrunk.txt")
    assert doc is not None and doc.text == "short\n"


def test_reads_in_parallel_threads_never_share_a_buffer(tmp_path: Path) -> None:
    rng = random.Random(11)
    files = {f"{n}.txt": random_bytes(rng, 5000) + str(n).encode() for n in range(40)}
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    docs = DiskDocuments(tmp_path)
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        for _ in range(5):
            names = list(files)
            rng.shuffle(names)
            texts = pool.map(lambda name: docs.read_sync(name), names)
            for name, doc in zip(names, texts, strict=True):
                assert doc is not None and doc.text == files[name].decode("utf-8", "surrogateescape"), name
    assert len(disk_documents._spares) <= disk_documents.SPARE_BUFFERS


def test_only_a_few_buffers_of_a_bounded_size_stay_held(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(disk_documents, "KEEP_BUFFER_BYTES", 1000)
    (tmp_path / "big.txt").write_bytes(b"x" * 5000)
    (tmp_path / "small.txt").write_bytes(b"y" * 10)
    docs = DiskDocuments(tmp_path)
    assert docs.read_sync("big.txt") is not None
    assert disk_documents._spares == []  # over the size kept: let go
    assert docs.read_sync("small.txt") is not None
    assert [len(b) for b in disk_documents._spares] == [11]
    for _ in range(3):  # returned each time, never piling up
        assert docs.read_sync("small.txt") is not None
    assert len(disk_documents._spares) == 1


def test_a_missing_file_or_a_directory_is_no_document(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    docs = DiskDocuments(tmp_path)
    assert docs.read_sync("missing.txt") is None and docs.read_sync("d") is None
