#!/usr/bin/env bash
# `make build` step: compile py_core/kernels/native/webnn_kernels.c twice,
#   _webnn_kernels.wasm32.wasm  clang --target=wasm32-unknown-emscripten -msimd128, a Pyodide side module
#                             (shipped in the core wheel; Pyodide loads it, py_core calls it through ctypes)
#   _webnn_kernels.relaxed.wasm32.wasm  the same with -DWK_RELAXED: the packed product's multiply-add as
#                             f32x4.relaxed_madd (relaxed SIMD; the worker loads it where the engine
#                             compiles it, else the plain one: py_core/kernels/native/__init__.py)
#   _webnn_kernels.host.so    the system C compiler, for CPython (the core tests run the same C code)
# Needs clang and wasm-ld (Debian: clang, lld; as root with apt-get they are installed when missing) and cc.
# Rebuilds only when the source or this script is newer than an output.
set -euo pipefail
cd "$(dirname "$0")/.."
DIR=py_core/kernels/native
SRC=$DIR/webnn_kernels.c
WASM=$DIR/_webnn_kernels.wasm32.wasm
RELAXED=$DIR/_webnn_kernels.relaxed.wasm32.wasm
HOST=$DIR/_webnn_kernels.host.so
# no fused multiply-add anywhere (wasm SIMD128 has none): the same rounding in both builds.
# -fwrapv: signed overflow wraps instead of being undefined, so -O3 can never delete a bounds check on the
# assumption that an index computation does not overflow (the kernels' i64 indices are also proven not to:
# py_core/kernels/native/__init__.py).  clang's -Wshorten-64-to-32 makes any i64 index narrowed back to 32
# bits an error in the wasm32 build.
FLAGS=(-O3 -std=c11 -ffreestanding -fPIC -ffp-contract=off -fwrapv -Wall -Wextra -Werror)

say() { echo "build_native: $*"; }

if ! command -v clang >/dev/null || ! command -v wasm-ld >/dev/null; then
  if [[ "$(id -u)" == 0 ]] && command -v apt-get >/dev/null; then
    say "installing clang and lld (wasm-ld) with apt-get"
    apt-get install -y -qq --no-install-recommends clang lld >/dev/null \
      || { apt-get update -qq && apt-get install -y -qq --no-install-recommends clang lld >/dev/null; } \
      || say "apt-get could not install clang and lld"
  fi
fi

stale() { [[ ! -f "$1" || "$SRC" -nt "$1" || "$DIR/webnn_plan.c" -nt "$1" || "$0" -nt "$1" ]]; }

# Without a compiler the polyfill still works: the worker keeps its NumPy kernels (several times slower, see
# docs/performance.md), and tests/pyodide says the wasm kernels did not load.
if ! command -v clang >/dev/null || ! command -v wasm-ld >/dev/null; then
  say "WARNING: clang and wasm-ld not found (Debian: apt-get install clang lld): the wasm C kernels are not built"
elif stale "$WASM"; then
  obj=$(mktemp --suffix=.o)
  clang --target=wasm32-unknown-emscripten -msimd128 -nostdlib "${FLAGS[@]}" -Wshorten-64-to-32 -c "$SRC" -o "$obj"
  wasm-ld --experimental-pic -shared -o "$WASM" "$obj"
  rm -f "$obj"
  say "built $WASM ($(stat -c %s "$WASM") bytes)"
fi
# Relaxed SIMD: clang 14 (Debian 12) emits the proposal's first opcode for the fused multiply-add, f32x4.fma
# (0xfd 0xaf 0x01), which browsers no longer accept; the standard f32x4.relaxed_madd (0xfd 0x85 0x02) has the
# same operands and length.  The object's bytes are renumbered only if the pattern occurs exactly as often as
# the compiler's own assembly listing has f32x4.fma (no operand byte happens to match), else no relaxed file.
if command -v clang >/dev/null && command -v wasm-ld >/dev/null && stale "$RELAXED"; then
  obj=$(mktemp --suffix=.o)
  asm=$(mktemp --suffix=.s)
  relaxed=(--target=wasm32-unknown-emscripten -msimd128 -mrelaxed-simd -DWK_RELAXED -nostdlib "${FLAGS[@]}"
           -Wshorten-64-to-32)
  clang "${relaxed[@]}" -c "$SRC" -o "$obj"
  clang "${relaxed[@]}" -S "$SRC" -o "$asm"
  want=$(grep -c $'^\tf32x4.fma' "$asm" || true)
  if python3 - "$obj" "$want" <<'PY'
import sys
path, want = sys.argv[1], int(sys.argv[2])
data = open(path, "rb").read()
old, new = bytes.fromhex("fdaf01"), bytes.fromhex("fd8502")
if want == 0 or data.count(old) != want:
    sys.exit(f"f32x4.fma: {data.count(old)} byte matches for {want} instructions")
open(path, "wb").write(data.replace(old, new))
PY
  then
    wasm-ld --experimental-pic -shared -o "$RELAXED" "$obj"
    say "built $RELAXED ($(stat -c %s "$RELAXED") bytes, $want relaxed_madd)"
  else
    rm -f "$RELAXED"
    say "WARNING: the relaxed-SIMD kernels are not built (the plain ones serve every engine)"
  fi
  rm -f "$obj" "$asm"
fi
if ! command -v cc >/dev/null; then
  say "WARNING: no C compiler (cc): the host C kernels for CPython are not built"
elif stale "$HOST"; then
  cc -shared "${FLAGS[@]}" -o "$HOST" "$SRC"
  say "built $HOST ($(stat -c %s "$HOST") bytes)"
fi
