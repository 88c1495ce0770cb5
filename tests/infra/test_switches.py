"""polyfill/src/switches.js is the one table of every switch the JS shim reads: the worker URL's parameters and the
keys of WEBNN_POLYFILL_CONFIG.  The sources are read as text: a switch the code reads that the table lacks, a read
around the table (URLSearchParams.get, WEBNN_POLYFILL_CONFIG outside config.js), a listed switch nothing reads, an
entry without its comment, or a docs/startup.md table that no longer matches the source, each fails here."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "polyfill" / "src"
SWITCHES = SRC / "switches.js"
STARTUP_DOC = ROOT / "docs" / "startup.md"
NODE = shutil.which("node")

# docs/startup.md holds the rendered table between these two lines
BEGIN = "<!-- switch table: rendered from polyfill/src/switches.js (tests/infra/test_switches.py) -->"
END = "<!-- end of the switch table -->"

TABLES = {"WORKER_SWITCHES": "worker URL switch", "CONFIG_KEYS": "WEBNN_POLYFILL_CONFIG key"}
# the accessors switches.js exports: each names its switch with a string literal (its first argument: an
# expression without commas, with calls nested two deep at most)
ARG = r"(?:[^,()]|\((?:[^()]|\([^()]*\))*\))+"
WORKER_CALL = re.compile(rf"\bworkerSwitch(?:On)?\(\s*{ARG},\s*'(\w+)'\s*\)")
CONFIG_CALL = re.compile(rf"\bconfig(?:On|Value)\(\s*{ARG},\s*'(\w+)'\s*\)")
ANY_CALL = re.compile(r"\b(?:workerSwitch|workerSwitchOn|configOn|configValue)\(")
# a config object's property read: config.x, this.config.x, runtime.config.x
CONFIG_PROPERTY = re.compile(r"(?<![\w/'\"])config\.(\w+)")  # not a module path ('./config.js')
# reads that go around the table
AROUND = [re.compile(r"\bsearchParams\b"), re.compile(r"\b(?:switches|params)\.(?:get|has)\(")]
LIVE_CONFIG = re.compile(r"\bWEBNN_POLYFILL_CONFIG\b")


def strip_comments(text: str) -> str:
    """JavaScript without its comments (a `//` after a colon, as in a URL inside a string, is kept)."""
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return re.sub(r"(^|[^:\\])//.*$", r"\1", text, flags=re.M)


def table_entries(source: str, table: str) -> list[tuple[str, str, str]]:
    """(name, default, comment) of each entry of `table` in switches.js's text, in order."""
    body = re.search(rf"export const {table} = Object\.freeze\(\{{\n(.*?)\n\}}\);", source, re.S)
    assert body, f"switches.js has no {table} table"
    entries, comment = [], []
    for line in body.group(1).splitlines():
        if m := re.fullmatch(r"  // (.*)", line):
            comment.append(m.group(1))
        elif m := re.fullmatch(r"  (\w+): (.+),", line):
            entries.append((m.group(1), m.group(2), " ".join(comment)))
            comment = []
        else:
            raise AssertionError(f"switches.js {table}: a line that is neither a comment nor an entry: {line!r}")
    return entries


def reads(sources: dict[str, str]) -> tuple[dict[str, set[str]], dict[str, set[str]], list[str]]:
    """The worker switches and config keys each file reads, and the problems found on the way."""
    worker: dict[str, set[str]] = {}
    config: dict[str, set[str]] = {}
    problems = []
    for name, text in sources.items():
        code = strip_comments(text)
        worker[name] = set(WORKER_CALL.findall(code))
        config[name] = set(CONFIG_CALL.findall(code)) | set(CONFIG_PROPERTY.findall(code))
        literal = len(WORKER_CALL.findall(code)) + len(CONFIG_CALL.findall(code))
        if name != "switches.js" and len(ANY_CALL.findall(code)) != literal:
            problems.append(f"{name}: a switch accessor called without a string literal name")
        if name != "switches.js":
            problems += [f"{name}: reads {p.pattern} around switches.js" for p in AROUND if p.search(code)]
        if name not in {"switches.js", "config.js"} and LIVE_CONFIG.search(code):
            problems.append(f"{name}: reads WEBNN_POLYFILL_CONFIG around switches.js (liveConfig)")
    return worker, config, problems


def polyfill_sources() -> dict[str, str]:
    return {p.relative_to(SRC).as_posix(): p.read_text() for p in sorted(SRC.rglob("*.js"))
            if "generated" not in p.relative_to(SRC).parts}


def render_table(source: str) -> str:
    """The Markdown table docs/startup.md carries, from switches.js's text."""
    lines = []
    for table, title in (("WORKER_SWITCHES", "Worker URL switch"), ("CONFIG_KEYS", "`WEBNN_POLYFILL_CONFIG` key")):
        lines += ["", f"| {title} | default | what it is for |", "|---|---|---|"]
        for name, default, comment in table_entries(source, table):
            if table == "WORKER_SWITCHES":
                shown = {"'1'": "on", "null": "not given"}[default]
            else:
                shown = f"`{default}`"
            lines.append(f"| `{name}` | {shown} | {comment.replace('|', '/')} |")
    return "\n".join(lines[1:])


def test_every_switch_read_is_in_the_table_and_every_entry_is_read() -> None:
    source = SWITCHES.read_text()
    listed = {table: {name for name, _, _ in table_entries(source, table)} for table in TABLES}
    worker, config, problems = reads(polyfill_sources())
    assert not problems, problems
    for name, used in worker.items():
        assert used <= listed["WORKER_SWITCHES"], f"{name} reads worker switches not in switches.js: " \
            f"{sorted(used - listed['WORKER_SWITCHES'])}"
    for name, used in config.items():
        assert used <= listed["CONFIG_KEYS"], f"{name} reads config keys not in switches.js: " \
            f"{sorted(used - listed['CONFIG_KEYS'])}"
    unread_worker = listed["WORKER_SWITCHES"] - set().union(*worker.values())
    unread_config = listed["CONFIG_KEYS"] - set().union(*config.values())
    assert not unread_worker, f"switches.js lists worker switches nothing reads: {sorted(unread_worker)}"
    assert not unread_config, f"switches.js lists config keys nothing reads: {sorted(unread_config)}"


def test_every_entry_says_what_it_is_for() -> None:
    source = SWITCHES.read_text()
    for table in TABLES:
        entries = table_entries(source, table)
        assert entries
        for name, _, comment in entries:
            assert len(comment) > 20, f"switches.js {table}.{name}: no comment saying what it is for"


@pytest.mark.skipif(NODE is None, reason="node is not installed")
def test_the_module_holds_what_its_text_says() -> None:
    """The table as JavaScript sees it (names, defaults, order) is the one read from its text above, and the
    accessors refuse a name the table lacks."""
    runner = """
const s = await import(process.argv[1]);
const refused = [];
for (const call of [() => s.workerSwitchOn(new URLSearchParams('x=0'), 'x'), () => s.configOn({}, 'x')]) {
  try { call(); } catch (e) { refused.push(String(e.message)); }
}
console.log(JSON.stringify({worker: s.WORKER_SWITCHES, config: s.CONFIG_KEYS, refused,
  off: s.workerSwitchOn(new URLSearchParams('native=0'), 'native'), on: s.configOn({}, 'staging')}));
"""
    out = subprocess.run([NODE, "--input-type=module", "-e", runner, str(SWITCHES)], capture_output=True, text=True,
                         timeout=60, check=True)
    got = json.loads(out.stdout)
    source = SWITCHES.read_text()
    for table, key in (("WORKER_SWITCHES", "worker"), ("CONFIG_KEYS", "config")):
        from_text = [(name, json.loads(default.replace("'", '"'))) for name, default, _ in table_entries(source, table)]
        assert from_text == list(got[key].items())
    assert len(got["refused"]) == 2 and all("unknown" in r for r in got["refused"])
    assert got["off"] is False and got["on"] is True


def test_the_checks_catch_what_they_look_for() -> None:
    """The scanner above on a made-up module: each kind of read around the table is found."""
    made_up = {
        "a.js": "const n = switches.get('native') === '0';",
        "b.js": "const w = new URL(url).searchParams;",
        "c.js": "const live = globalThis.WEBNN_POLYFILL_CONFIG;",
        "d.js": "const name = 'x'; workerSwitchOn(params, name);",
        "e.js": "if (configOn(this.config, 'nosuchkey')) go(); // a comment naming config.other",
    }
    worker, config, problems = reads(made_up)
    assert {p.split(":")[0] for p in problems} == {"a.js", "b.js", "c.js", "d.js"}
    assert config["e.js"] == {"nosuchkey"}
    assert strip_comments("f('http://x'); // config.y") == "f('http://x'); "


def test_startup_doc_shows_the_table_as_it_is() -> None:
    doc = STARTUP_DOC.read_text()
    assert BEGIN in doc and END in doc, f"docs/startup.md lacks the switch table's markers ({BEGIN})"
    shown = doc.split(BEGIN, 1)[1].split(END, 1)[0].strip()
    assert shown == render_table(SWITCHES.read_text()), (
        "docs/startup.md's switch table differs from polyfill/src/switches.js; put this between its markers:\n"
        + render_table(SWITCHES.read_text()))
