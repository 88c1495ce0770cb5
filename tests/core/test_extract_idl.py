"""tests/data/webnn.idl is the IDL of the vendored draft (tests/data/spec/index.bs), as scripts/extract_idl.py
extracts it: regenerate it with that script when the draft is updated."""

from __future__ import annotations

import re
from pathlib import Path

from scriptfiles import load_script

extract = load_script("extract_idl")
DRAFT = extract.SOURCE  # the vendored draft and the committed IDL: the paths the script writes and reads
IDL = extract.OUT


def test_committed_idl_is_the_drafts() -> None:
    assert IDL.read_text() == extract.generate(DRAFT), \
        "stale: run python scripts/extract_idl.py"


def test_every_idl_block_is_taken_in_order() -> None:
    """Each block of the draft appears once, in document order, whichever tag Bikeshed spelt it with."""
    text = DRAFT.read_text()
    opened = len(re.findall(r'<script type="?idl"?>|<(?:pre|xmp) class="?idl"?>', text))
    found = extract.blocks(text)
    assert len(found) == opened > 60
    assert found[0].startswith("interface mixin NavigatorML {")
    assert any("dictionary MLOpSupportLimits {" in b for b in found)  # spelt <script type="idl">
    idl = IDL.read_text()
    positions = [idl.index(b) for b in found]
    assert positions == sorted(positions)


def test_other_tag_spellings(tmp_path: Path) -> None:
    (tmp_path / "README.md").write_text("Source: a test\n")
    src = tmp_path / "index.bs"
    src.write_text("<pre class=idl>\ninterface A {};\n</pre>\ntext\n<xmp class=idl>\ninterface B {};\n</xmp>\n"
                   "<script type=idl>\ninterface C {};\n</script>\n<pre>\ninterface D {};\n</pre>\n")
    assert extract.blocks(src.read_text()) == ["interface A {};\n", "interface B {};\n", "interface C {};\n"]
    assert "(Source: a test)" not in extract.generate(src) and "(a test)" in extract.generate(src)
