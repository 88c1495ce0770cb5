"""IDL fidelity: the draft's WebIDL (tests/data/webnn.idl, extracted from the vendored draft tests/data/spec/index.bs
by scripts/extract_idl.py), parsed here, checked against the polyfill in a browser and against the native WebNN
of the npm Chromium 153.

Every interface must exist on `webnnPolyfill`, every attribute must be an accessor on the prototype whose value
has the IDL type, every operation must exist with `length` equal to its required argument count (the shortest
overload), promise-returning operations must reject instead of throwing, and opSupportLimits() must have the
members and dictionary shapes the IDL gives MLOpSupportLimits.  https://webidl.spec.whatwg.org/
In strict mode (data-strict: the draft's behaviour) the polyfill must match the draft exactly; in the default
(Chromium-compatible) mode, and on Chromium's own prototypes, every member that differs from the draft must be
named in docs/compatibility.md's deviation table (whose rows test_compat.py checks one by one).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import test_compat

pytestmark = pytest.mark.browser

IDL_PATH = Path(__file__).resolve().parents[1] / "data" / "webnn.idl"


def documented_members() -> set[str]:
    """`Interface.member` names in the first cells of docs/compatibility.md's deviation table."""
    return {f"{i}.{m}" for row in test_compat.table_rows() for i, m in re.findall(r"\b(ML\w+)\.(\w+)", row)}


# ------------------------------------------------------------------------------------------- a small WebIDL parser

@dataclass
class Argument:
    name: str
    type: str
    optional: bool
    variadic: bool


@dataclass
class Interface:
    name: str
    attributes: dict[str, tuple[str, bool]] = field(default_factory=dict)  # name -> (type, readonly)
    operations: dict[str, list[tuple[str, list[Argument]]]] = field(default_factory=dict)  # overloads
    constructors: list[list[Argument]] = field(default_factory=list)

    def required_count(self, op: str) -> int:
        """WebIDL `length` of an operation: the shortest required-argument prefix over its overloads."""
        return min(_required(args) for _, args in self.operations[op])

    def to_json(self) -> dict[str, Any]:
        return {
            "attributes": {n: {"type": t, "readonly": r} for n, (t, r) in self.attributes.items()},
            "operations": {n: {"length": self.required_count(n),
                               "returns": sorted({ret for ret, _ in ovl})} for n, ovl in self.operations.items()},
            "constructorLength": min(map(_required, self.constructors)) if self.constructors else None,
        }


@dataclass
class Dictionary:
    name: str
    inherits: str | None = None
    members: dict[str, str] = field(default_factory=dict)  # name -> type


@dataclass
class Idl:
    interfaces: dict[str, Interface] = field(default_factory=dict)
    mixins: dict[str, Interface] = field(default_factory=dict)
    includes: list[tuple[str, str]] = field(default_factory=list)
    dictionaries: dict[str, Dictionary] = field(default_factory=dict)
    enums: dict[str, list[str]] = field(default_factory=dict)
    typedefs: dict[str, str] = field(default_factory=dict)

    def dictionary_members(self, name: str) -> dict[str, str]:
        """Members of a dictionary including the inherited ones."""
        d = self.dictionaries[name]
        inherited = self.dictionary_members(d.inherits) if d.inherits else {}
        return {**inherited, **d.members}


def _required(args: list[Argument]) -> int:
    n = 0
    for a in args:
        if a.optional or a.variadic:
            break
        n += 1
    return n


def _strip_comments(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def _split_top(text: str, sep: str) -> list[str]:
    """Split on `sep` outside (), <>, [], {} and string literals."""
    parts, depth, cur, quote = [], 0, [], False
    for ch in text:
        if ch == '"':
            quote = not quote
        elif not quote and ch in "(<[{":
            depth += 1
        elif not quote and ch in ")>]}":
            depth -= 1
        if ch == sep and depth == 0 and not quote:
            parts.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    tail = "".join(cur).strip()
    return [p for p in parts + [tail] if p]


def _drop_ext_attrs(text: str) -> str:
    """Remove leading [ExtendedAttributes] (nested brackets allowed)."""
    text = text.strip()
    while text.startswith("["):
        depth = 0
        for i, ch in enumerate(text):
            depth += ch == "["
            depth -= ch == "]"
            if depth == 0:
                text = text[i + 1:].strip()
                break
    return text


def _norm_type(t: str) -> str:
    """A type with extended attributes removed and whitespace collapsed: `sequence<[EnforceRange] unsigned long>`
    becomes `sequence<unsigned long>`."""
    t = re.sub(r"\[[^\]]*\]\s*", "", t)
    return re.sub(r"\s+", " ", t).replace("< ", "<").replace(" >", ">").strip()


def _parse_args(text: str) -> list[Argument]:
    out = []
    for raw in _split_top(text, ","):
        a = _drop_ext_attrs(re.sub(r"\s*=.*$", "", raw, flags=re.S))  # default values hold no "="
        optional = a.startswith("optional ")
        if optional:
            a = a[len("optional "):]
        a = _drop_ext_attrs(a)
        m = re.match(r"^(.*?)(\.\.\.)?\s*(\w+)$", a, flags=re.S)
        assert m, f"cannot parse argument {raw!r}"
        out.append(Argument(m.group(3), _norm_type(m.group(1)), optional, bool(m.group(2))))
    return out


def _bodies(text: str) -> list[tuple[str, str]]:
    """Top-level definitions as (header, body) pairs; body is None-like '' for `;`-terminated statements."""
    out, i = [], 0
    while i < len(text):
        j = text.find("{", i)
        k = text.find(";", i)
        if k != -1 and (j == -1 or k < j):
            out.append((text[i:k].strip(), ""))
            i = k + 1
            continue
        if j == -1:
            break
        depth, m = 0, j
        while m < len(text):
            depth += text[m] == "{"
            depth -= text[m] == "}"
            if depth == 0:
                break
            m += 1
        out.append((text[i:j].strip(), text[j + 1:m]))
        i = text.find(";", m) + 1
    return [(h, b) for h, b in out if h]


def parse_idl(text: str) -> Idl:
    """Parse the subset of WebIDL the WebNN spec uses."""
    idl = Idl()
    for header, body in _bodies(_strip_comments(text)):
        header = _drop_ext_attrs(header)
        if m := re.match(r"^(\w+)\s+includes\s+(\w+)$", header):
            idl.includes.append((m.group(1), m.group(2)))
        elif m := re.match(r"^typedef\s+(.*)\s+(\w+)$", header, flags=re.S):
            idl.typedefs[m.group(2)] = _norm_type(m.group(1))
        elif m := re.match(r"^enum\s+(\w+)$", header):
            idl.enums[m.group(1)] = re.findall(r'"([^"]*)"', body)
        elif m := re.match(r"^(partial\s+)?dictionary\s+(\w+)(?:\s*:\s*(\w+))?$", header):
            d = idl.dictionaries.setdefault(m.group(2), Dictionary(m.group(2)))
            d.inherits = m.group(3) or d.inherits
            for member in _split_top(body, ";"):
                mm = re.match(r"^(?:required\s+)?(.*?)\s+(\w+)(?:\s*=.*)?$", _drop_ext_attrs(member), flags=re.S)
                assert mm, f"cannot parse dictionary member {member!r}"
                d.members[mm.group(2)] = _norm_type(mm.group(1))
        elif m := re.match(r"^(partial\s+)?interface(\s+mixin)?\s+(\w+)$", header):
            table = idl.mixins if m.group(2) else idl.interfaces
            itf = table.setdefault(m.group(3), Interface(m.group(3)))
            for member in _split_top(body, ";"):
                member = _drop_ext_attrs(member)
                if member.startswith("constructor"):
                    itf.constructors.append(_parse_args(member[member.index("(") + 1:member.rindex(")")]))
                elif am := re.match(r"^(readonly\s+)?attribute\s+(.*)\s+(\w+)$", member, flags=re.S):
                    itf.attributes[am.group(3)] = (_norm_type(am.group(2)), bool(am.group(1)))
                else:
                    paren = member.index("(")
                    om = re.match(r"^(.*?)\s*(\w+)\s*$", member[:paren], flags=re.S)
                    assert om, f"cannot parse operation {member!r}"
                    args = _parse_args(member[paren + 1:member.rindex(")")])
                    itf.operations.setdefault(om.group(2), []).append((_norm_type(om.group(1)), args))
        else:
            raise AssertionError(f"unsupported IDL definition: {header!r}")
    return idl


@pytest.fixture(scope="module")
def idl() -> Idl:
    return parse_idl(IDL_PATH.read_text())


def test_parser_reads_the_spec_idl(idl: Idl) -> None:
    """The parser itself: counts and overloads of the vendored draft, checked by hand against the spec."""
    assert set(idl.interfaces) == {"ML", "MLContext", "MLGraph", "MLOperand", "MLTensor", "MLGraphBuilder"}
    builder = idl.interfaces["MLGraphBuilder"]
    assert len(builder.operations["constant"]) == 3 and builder.required_count("constant") == 1
    assert builder.required_count("gru") == 5 and builder.required_count("lstmCell") == 6
    assert builder.required_count("split") == 2 and builder.required_count("build") == 1
    assert len(builder.operations) == 95 + 3  # the draft's 95 operators, input, constant, build
    assert idl.interfaces["MLContext"].required_count("readTensor") == 1
    assert idl.interfaces["ML"].required_count("createContext") == 0
    assert idl.interfaces["MLTensor"].attributes["shape"] == ("FrozenArray<unsigned long>", True)
    assert idl.dictionary_members("MLTensorDescriptor").keys() == {"dataType", "shape", "readable", "writable"}
    assert idl.dictionary_members("MLConv2dSupportLimits").keys() == {"input", "filter", "bias", "output"}
    assert idl.enums["MLOperandDataType"] == ["float32", "float16", "int32", "uint32", "int64", "uint64", "int8",
                                              "uint8"]
    # what the June 2026 draft changed: a GPUDevice overload, per-output recurrent limits, the rounding member
    assert [args[0].type for _, args in idl.interfaces["ML"].operations["createContext"]] == ["MLContextOptions",
                                                                                              "GPUDevice"]
    assert {k for k in idl.dictionary_members("MLLstmSupportLimits") if k.startswith("output")} == {
        "output0", "output1", "output2"}
    assert "outputShapeRounding" in idl.dictionary_members("MLPool2dOptions")
    assert idl.interfaces["MLContext"].attributes["accelerated"] == ("boolean", True)


# ------------------------------------------------------------------------------------------- checks in the browser

INTERFACE_CHECK_JS = r"""
async (model) => {
  const P = webnnPolyfill;
  const problems = [];
  const extras = {};
  const bad = (what, why) => problems.push(`${what}: ${why}`);
  const isPromiseType = (t) => t.startsWith('Promise<');

  // Instances of every interface, to read attributes and call operations on.
  const ctx = await P.ml.createContext();
  const builder = new P.MLGraphBuilder(ctx);
  const x = builder.input('x', {dataType: 'float32', shape: [2, 3]});
  const tensor = await ctx.createTensor({dataType: 'float32', shape: [2, 3], readable: true, writable: true});
  const gb = new P.MLGraphBuilder(ctx);
  const graph = await gb.build({y: gb.relu(gb.input('x', {dataType: 'float32', shape: [2]}))});
  const instances = {ML: P.ml, MLContext: ctx, MLGraphBuilder: builder, MLOperand: x, MLTensor: tensor, MLGraph: graph};

  function typeOk(type, v) {
    if (type === 'boolean') return typeof v === 'boolean';
    if (type === 'unsigned long') return Number.isInteger(v) && v >= 0 && v < 2 ** 32;
    if (type.startsWith('Promise<')) return v instanceof Promise;
    const fa = type.match(/^FrozenArray<(.*)>$/);
    if (fa) return Array.isArray(v) && Object.isFrozen(v) && v.every((e) => typeOk(fa[1], e));
    if (type in model.enums) return typeof v === 'string' && model.enums[type].includes(v);
    if (type in model.interfaces) return Object.prototype.toString.call(v) === `[object ${type}]`;
    return false;
  }

  for (const [name, itf] of Object.entries(model.interfaces)) {
    const cls = P[name];
    if (typeof cls !== 'function') { bad(name, 'interface missing on webnnPolyfill'); continue; }
    if (cls.name !== name) bad(name, `interface object is named ${cls.name}`);
    const proto = cls.prototype;
    if (proto[Symbol.toStringTag] !== name) bad(name, `@@toStringTag is ${String(proto[Symbol.toStringTag])}`);
    if (itf.constructorLength === null) {
      try { new cls(); bad(name, 'has no constructor in IDL but new succeeded'); }
      catch (e) { if (!(e instanceof TypeError)) bad(name, `new threw ${e.name}, not TypeError`); }
    }
    // WebIDL: the interface object's length is its constructor's required count, 0 without a constructor
    if (cls.length !== (itf.constructorLength ?? 0)) {
      bad(name, `interface object length ${cls.length} != ${itf.constructorLength ?? 0}`);
    }
    for (const key of ['name', 'length']) {
      const d = Object.getOwnPropertyDescriptor(cls, key);
      if (!d || d.writable || d.enumerable || !d.configurable) bad(`${name}.${key}`, 'not {writable: false, enumerable: false, configurable: true}');
    }
    const tag = Object.getOwnPropertyDescriptor(proto, Symbol.toStringTag);
    if (!tag || tag.writable || tag.enumerable || !tag.configurable) bad(name, '@@toStringTag is not {writable: false, enumerable: false, configurable: true}');
    const inst = instances[name];
    for (const [attr, {type, readonly}] of Object.entries(itf.attributes)) {
      const d = Object.getOwnPropertyDescriptor(proto, attr);
      if (!d || typeof d.get !== 'function') { bad(`${name}.${attr}`, 'not an accessor on the prototype'); continue; }
      if (readonly && d.set !== undefined) bad(`${name}.${attr}`, 'readonly attribute has a setter');
      if (!d.enumerable || !d.configurable) bad(`${name}.${attr}`, 'not enumerable and configurable');
      if (d.get.name !== `get ${attr}` || d.get.length !== 0) bad(`${name}.${attr}`, `getter is named '${d.get.name}', length ${d.get.length}`);
      // another `this` (a plain object, the prototype itself): TypeError, as a rejection for a promise type
      for (const [what, self] of [['a foreign this', {}], ['the prototype', proto]]) {
        try {
          const r = d.get.call(self);
          if (!isPromiseType(type)) bad(`${name}.${attr}`, `getter accepted ${what}`);
          else if (!(r instanceof Promise)) bad(`${name}.${attr}`, `getter on ${what} gave ${String(r)}, not a promise`);
          else await r.then(() => bad(`${name}.${attr}`, `resolved on ${what}`),
                            (e) => { if (!(e instanceof TypeError)) bad(`${name}.${attr}`, `rejected on ${what} with ${e.name}`); });
        } catch (e) {
          if (isPromiseType(type)) bad(`${name}.${attr}`, `threw ${e.name} on ${what} instead of rejecting`);
          else if (!(e instanceof TypeError)) bad(`${name}.${attr}`, `${what} threw ${e.name}`);
        }
      }
      const v = inst[attr];
      if (!typeOk(type, v)) bad(`${name}.${attr}`, `value ${String(v)} is not of IDL type ${type}`);
    }
    for (const [op, {length, returns}] of Object.entries(itf.operations)) {
      const d = Object.getOwnPropertyDescriptor(proto, op);
      if (!d || typeof d.value !== 'function') { bad(`${name}.${op}`, 'operation missing'); continue; }
      if (d.value.length !== length) bad(`${name}.${op}`, `length ${d.value.length} != ${length}`);
      if (!d.enumerable || !d.writable || !d.configurable) bad(`${name}.${op}`, 'not enumerable, writable, configurable');
      const promiseOp = returns.every(isPromiseType);
      // foreign this: TypeError, as a rejection for promise-returning operations
      try {
        const r = d.value.call({});
        if (!promiseOp) bad(`${name}.${op}`, 'accepted a foreign this');
        else await r.then(() => bad(`${name}.${op}`, 'resolved with a foreign this'),
                          (e) => { if (!(e instanceof TypeError)) bad(`${name}.${op}`, `rejected with ${e.name}`); });
      } catch (e) {
        if (promiseOp) bad(`${name}.${op}`, `threw ${e.name} synchronously instead of rejecting`);
        else if (!(e instanceof TypeError)) bad(`${name}.${op}`, `foreign this threw ${e.name}`);
      }
      // too few arguments: TypeError, again as a rejection for promise-returning operations
      if (length > 0) {
        try {
          const r = d.value.call(inst);
          if (!promiseOp) bad(`${name}.${op}`, 'accepted zero arguments');
          else await r.then(() => bad(`${name}.${op}`, 'resolved with zero arguments'),
                            (e) => { if (!(e instanceof TypeError)) bad(`${name}.${op}`, `rejected with ${e.name}`); });
        } catch (e) {
          if (promiseOp) bad(`${name}.${op}`, `threw ${e.name} synchronously instead of rejecting`);
          else if (!(e instanceof TypeError)) bad(`${name}.${op}`, `zero arguments threw ${e.name}`);
        }
      }
    }
    const known = new Set(['constructor', ...Object.keys(itf.attributes), ...Object.keys(itf.operations)]);
    extras[name] = Object.getOwnPropertyNames(proto).filter((k) => !known.has(k));
  }
  // NavigatorML: navigator.ml is the polyfill's [SameObject] ML when the polyfill installed itself.
  const navInfo = {installed: P.installed, same: navigator.ml === navigator.ml};
  if (P.installed) {
    const proto = Object.getPrototypeOf(navigator);
    const d = Object.getOwnPropertyDescriptor(proto, 'ml');
    navInfo.accessor = !!(d && d.get) && d.enumerable && d.configurable && d.get.name === 'get ml' && d.get.length === 0;
    navInfo.isPolyfill = navigator.ml === P.ml;
    // read on Navigator.prototype itself (not a Navigator): TypeError, as for every attribute of a platform object
    try { navInfo.onPrototype = String(proto.ml); } catch (e) { navInfo.onPrototype = e.name; }
  }
  const lostSame = ctx.lost === ctx.lost;
  const shapeSame = x.shape === x.shape && tensor.shape === tensor.shape;
  tensor.destroy(); graph.destroy(); ctx.destroy();
  return {problems, extras, navInfo, lostSame, shapeSame};
}
"""


def _model(idl: Idl) -> dict[str, Any]:
    return {"interfaces": {name: itf.to_json() for name, itf in idl.interfaces.items()}, "enums": idl.enums}


@pytest.mark.parametrize("mode", ["strict", "default"])
def test_every_interface_member_and_arity_matches_the_spec_idl(
        mode: str, idl: Idl, request: pytest.FixtureRequest) -> None:
    """Strict mode: exactly the draft.  Default mode: the draft except the members the deviation table names."""
    page = request.getfixturevalue("webnn_strict_page" if mode == "strict" else "webnn_page")
    out = page.evaluate(INTERFACE_CHECK_JS, _model(idl))
    allowed = documented_members() if mode == "default" else set()
    assert [p for p in out["problems"] if p.split(": ", 1)[0] not in allowed] == []
    extras = {name: sorted(m for m in found if f"{name}.{m}" not in allowed) for name, found in out["extras"].items()}
    assert all(not v for v in extras.values()), f"members the draft does not have: {extras}"
    assert out["navInfo"]["same"]
    if out["navInfo"]["installed"]:
        assert out["navInfo"]["accessor"] and out["navInfo"]["isPolyfill"]
        assert out["navInfo"]["onPrototype"] == "TypeError"
    assert out["lostSame"] and out["shapeSame"]


LIMITS_JS = r"""
async () => {
  const ctx = await webnnPolyfill.ml.createContext();
  const limits = ctx.opSupportLimits();
  const fresh = ctx.opSupportLimits() !== limits;
  ctx.destroy();
  return {limits, fresh};
}
"""


def _check_limits_value(idl: Idl, type_name: str, value: Any, where: str, problems: list[str]) -> None:
    """Check one opSupportLimits member against its IDL dictionary type, recursively."""
    if type_name == "MLDataTypeList":
        if not (isinstance(value, list) and value and set(value) <= set(idl.enums["MLOperandDataType"])):
            problems.append(f"{where}: {value!r} is not a non-empty list of MLOperandDataType")
        return
    if type_name in idl.enums:
        if value not in idl.enums[type_name]:
            problems.append(f"{where}: {value!r} is not an {type_name}")
        return
    if type_name in ("unsigned long", "unsigned long long"):
        if not (isinstance(value, int) and value >= 0):
            problems.append(f"{where}: {value!r} is not an {type_name}")
        return
    members = idl.dictionary_members(type_name)
    if not isinstance(value, dict):
        problems.append(f"{where}: expected a {type_name} dictionary, got {value!r}")
        return
    if set(value) != set(members):
        problems.append(f"{where}: members {sorted(value)} != {type_name} members {sorted(members)}")
    for name, member_type in members.items():
        if name in value:
            _check_limits_value(idl, member_type, value[name], f"{where}.{name}", problems)
    if type_name == "MLRankRange" and isinstance(value, dict) and not value.get("min", 0) <= value.get("max", -1):
        problems.append(f"{where}: min {value.get('min')} > max {value.get('max')}")


@pytest.mark.parametrize("mode", ["strict", "default"])
def test_op_support_limits_has_the_idl_dictionary_shape(mode: str, idl: Idl, request: pytest.FixtureRequest) -> None:
    """Every MLOpSupportLimits member of the IDL (top level and per operator) with exactly its dictionary's
    members, in both modes (Chromium's dictionaries are the draft's since #910); every builder operator has a
    limits member."""
    page = request.getfixturevalue("webnn_strict_page" if mode == "strict" else "webnn_page")
    out = page.evaluate(LIMITS_JS)
    assert out["fresh"], "opSupportLimits() must return a new dictionary each call"
    problems: list[str] = []
    _check_limits_value(idl, "MLOpSupportLimits", out["limits"], "opSupportLimits()", problems)
    assert problems == []
    operators = set(idl.interfaces["MLGraphBuilder"].operations) - {"input", "constant", "build"}
    assert operators <= set(out["limits"])


# ------------------------------------------------------------------------------------------- Chromium's shipped IDL

# Each interface's prototype members as {name: "attribute" | operation length}: Chromium's native objects and
# the polyfill's (default mode) on the same page.
SURFACE_JS = r"""
async () => {
  const surface = (objects) => Object.fromEntries(Object.entries(objects).map(([name, o]) => {
    const proto = Object.getPrototypeOf(o);
    return [name, Object.fromEntries(Object.getOwnPropertyNames(proto).filter((k) => k !== 'constructor').map((k) => {
      const d = Object.getOwnPropertyDescriptor(proto, k);
      return [k, d.get ? 'attribute' : typeof d.value === 'function' ? d.value.length : typeof d.value];
    }))];
  }));
  const objects = async (ml, Builder) => {
    const ctx = await ml.createContext();
    const b = new Builder(ctx);
    const x = b.input('x', {dataType: 'float32', shape: [2]});
    const graph = await b.build({y: b.relu(x)});
    const tensor = await ctx.createTensor({dataType: 'float32', shape: [2], readable: true});
    const out = surface({ML: ml, MLContext: ctx, MLGraphBuilder: b, MLOperand: x, MLTensor: tensor, MLGraph: graph});
    tensor.destroy(); graph.destroy(); ctx.destroy();
    return out;
  };
  const nctx = await navigator.ml.createContext();
  const nativeLimits = nctx.opSupportLimits();
  nctx.destroy();
  return {native: await objects(navigator.ml, MLGraphBuilder),
          polyfill: await objects(webnnPolyfill.ml, webnnPolyfill.MLGraphBuilder), nativeLimits};
}
"""


def _without_data_types(value: Any, dropped: set[str]) -> Any:
    """A limits dictionary with the `dropped` data types taken out of every dataTypes list."""
    if isinstance(value, dict):
        return {k: [t for t in v if t not in dropped] if k == "dataTypes" else _without_data_types(v, dropped)
                for k, v in value.items()}
    return value


def _draft_surface(idl: Idl) -> dict[str, dict[str, Any]]:
    return {name: {**{a: "attribute" for a in itf.attributes},
                   **{op: itf.required_count(op) for op in itf.operations}} for name, itf in idl.interfaces.items()}


def _differences(want: dict[str, dict[str, Any]], got: dict[str, dict[str, Any]]) -> dict[str, str]:
    """`Interface.member` -> how `got` differs from `want` (missing, extra, or another kind / length)."""
    out = {}
    for name in sorted(set(want) | set(got)):
        w, g = want.get(name, {}), got.get(name, {})
        for member in sorted(set(w) | set(g)):
            if w.get(member) != g.get(member):
                out[f"{name}.{member}"] = f"{w.get(member, 'absent')} -> {g.get(member, 'absent')}"
    return out


def test_chromium_shipped_idl_against_the_draft_and_the_polyfill(
        native_webnn_page: Any, idl: Idl, browser_name: str) -> None:
    """The npm Chromium 153's native prototypes (what it ships) against the draft, and the polyfill's default mode
    against them: every member missing, extra or of another arity is a row of the deviation table.  Its
    opSupportLimits() has exactly the draft's dictionaries, with only the data types the table names added."""
    if browser_name != "chromium":
        pytest.skip("Chromium's shipped IDL is read in the npm Chromium")
    out = native_webnn_page.evaluate(SURFACE_JS)
    documented = documented_members()
    native_vs_draft = _differences(_draft_surface(idl), out["native"])
    polyfill_vs_native = _differences(out["native"], out["polyfill"])
    assert native_vs_draft, "Chromium 153 differs from the draft (MLGraph.devices at least): the probe saw nothing"
    assert {m: d for m, d in native_vs_draft.items() if m not in documented} == {}
    assert {m: d for m, d in polyfill_vs_native.items() if m not in documented} == {}
    extra_types = {m for row in test_compat.table_rows() for m in re.findall(r"^(\w+) data type$", row)}
    assert "int4" in extra_types  # the row parsed as a data type
    problems: list[str] = []
    _check_limits_value(idl, "MLOpSupportLimits", _without_data_types(out["nativeLimits"], extra_types),
                        "native opSupportLimits()", problems)
    assert problems == []


CHECK_DIMENSIONS_JS = r"""
async () => {
  const ctx = await webnnPolyfill.ml.createContext();
  const attempt = async (shape, dataType) => {
    try { (await ctx.createTensor({dataType, shape})).destroy(); return 'ok'; }
    catch (e) { return `${e.name}: ${e.message}`; }
  };
  const out = [await attempt([65536, 32768], 'uint8'),  // 2^31 elements (and 2^31 bytes)
               await attempt([2 ** 29], 'float32')];    // 2^29 elements, 2^31 bytes
  ctx.destroy();
  return out;
}
"""


def test_check_dimensions_refuses_the_element_count_before_the_byte_length(webnn_page: Any) -> None:
    """The draft's "check dimensions": an element count that is not a valid dimension (over 2^31-1, py_core's
    MAX_DIMENSION through the generated types.json) is refused as such, before the byte length is compared."""
    count, byte_length = webnn_page.evaluate(CHECK_DIMENSIONS_JS)
    assert count.startswith("TypeError") and "2147483648 elements, more than a valid dimension (2147483647)" in count
    assert byte_length.startswith("TypeError") and "more than maxTensorByteLength" in byte_length, byte_length
