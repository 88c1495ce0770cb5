"""What the reports share: the stylesheet and the escaping of every value written into HTML."""

from __future__ import annotations

from html import escape as _escape
from typing import Any

CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:1.5rem 2rem;color:#222;max-width:1400px}
h1{margin:.2rem 0}h2{margin-top:2rem;border-bottom:2px solid #eee}
table{border-collapse:collapse;margin:.5rem 0}
td,th{border:1px solid #ddd;padding:.2rem .45rem;text-align:left;vertical-align:top}th{background:#f6f6f6}
td.c{text-align:center;white-space:nowrap}.pass{background:#d9f2d9}.fail{background:#f8d0d0}
.part{background:#fde7c0}.na{background:#eee;color:#777}.small{font-size:12px;color:#555}
code{font-family:ui-monospace,monospace;font-size:12px}.badge{display:inline-block;padding:.1rem .5rem;
border-radius:.6rem;margin-right:.3rem;background:#eee}.charts{display:flex;flex-wrap:wrap;gap:1rem}
details{margin:.3rem 0}summary{cursor:pointer}
"""


def escape(v: Any) -> str:
    """`v` as HTML text: every field of run.json and results.jsonl is data, whatever its JSON type."""
    return _escape(str(v))
