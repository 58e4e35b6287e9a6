"""DiskDocuments decodes a file a piece at a time (issue 18): the text must be exactly what decoding
the whole file gives, whatever piece a character or an undecodable byte falls across."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from lsp_agent.core import disk_documents
from lsp_agent.core.disk_documents import DiskDocuments

BITS = [b"a", b"\n", b"\r\n", "é".encode(), "€".encode(), "😀".encode(), b"\xff", b"\xe2\x82", b"\xf0\x9f"]


@pytest.mark.parametrize("piece", [1, 2, 3, 5, 1 << 16])
def test_a_file_read_in_pieces_is_the_whole_file_decoded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                         piece: int) -> None:
    monkeypatch.setattr(disk_documents, "READ_PIECE", piece)
    rng = random.Random(piece)
    docs = DiskDocuments(tmp_path)
    for n in range(300):
        # truncated sequences (b"\xe2\x82", b"\xf0\x9f") land mid-file and at the very end
        data = b"".join(rng.choice(BITS) for _ in range(rng.randint(0, 20)))
        (tmp_path / f"{n}.txt").write_bytes(data)
        doc = docs.read_sync(f"{n}.txt")
        assert doc is not None and doc.text == data.decode("utf-8", "surrogateescape"), data
        assert doc.text.encode("utf-8", "surrogateescape") == data


def test_a_missing_file_or_a_directory_is_no_document(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    docs = DiskDocuments(tmp_path)
    assert docs.read_sync("missing.txt") is None and docs.read_sync("d") is None
