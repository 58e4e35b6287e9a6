"""LineDocument gives exactly pygls's text after any incremental change, odd ranges included."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from lsprotocol import types
from pygls.workspace import TextDocument

from lsp_agent.server.line_document import LineDocument, LineWorkspace

URI = "file:///ws/doc.txt"
#: pieces that stress what positions are counted on: astral characters (2 UTF-16 units), CRLF,
#: a lone CR (a line break for pygls) and the parts of a CRLF arriving separately
PIECES = ["a", "bc", "😀", "é", "\n", "\r\n", "\r", "\u2028", "x😀y", "    ", ""]
texts = st.lists(st.sampled_from(PIECES), max_size=30).map("".join)
positions = st.builds(types.Position, line=st.integers(0, 12), character=st.integers(0, 12))


def change(start: types.Position, end: types.Position, text: str) -> types.TextDocumentContentChangePartial:
    return types.TextDocumentContentChangePartial(range=types.Range(start=start, end=end), text=text)


@settings(max_examples=400, deadline=None)
@given(initial=texts, edits=st.lists(st.tuples(positions, positions, texts), max_size=12))
def test_random_changes_give_pygls_text(initial: str, edits: list[tuple[types.Position, types.Position, str]]
                                        ) -> None:
    ours = LineDocument(URI, source=initial)
    theirs = TextDocument(URI, source=initial)
    for start, end, text in edits:
        # pygls's position conversion clamps a position in place: each document gets its own copy.
        ours.apply_change(change(types.Position(start.line, start.character),
                                 types.Position(end.line, end.character), text))
        theirs.apply_change(change(types.Position(start.line, start.character),
                                   types.Position(end.line, end.character), text))
        assert ours.source == theirs.source
        assert ours.lines == theirs.lines


def test_a_crlf_joined_by_a_deletion_is_one_line_break() -> None:
    doc = LineDocument(URI, source="ab\rX\nc")
    doc.apply_change(change(types.Position(1, 0), types.Position(1, 1), ""))  # delete X: \r and \n meet
    assert doc.source == "ab\r\nc"
    assert doc.lines == ("ab\r\n", "c")


def test_a_full_change_and_a_change_of_an_empty_document() -> None:
    doc = LineDocument(URI, source="")
    doc.apply_change(change(types.Position(0, 0), types.Position(0, 0), "one\ntwo"))
    assert doc.source == "one\ntwo"
    doc.apply_change(types.TextDocumentContentChangeWholeDocument(text="whole\r\n"))
    assert doc.lines == ("whole\r\n",)


def test_the_workspace_opens_line_documents() -> None:
    workspace = LineWorkspace(None)
    workspace.put_text_document(types.TextDocumentItem(uri=URI, language_id="text", version=1, text="a\nb"))
    workspace.update_text_document(types.VersionedTextDocumentIdentifier(uri=URI, version=2),
                                   change(types.Position(1, 1), types.Position(1, 1), "😀!"))
    doc = workspace.get_text_document(URI)
    assert isinstance(doc, LineDocument)
    assert (doc.source, doc.version) == ("a\nb😀!", 2)
