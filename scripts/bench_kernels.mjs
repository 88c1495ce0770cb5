// The C kernels alone, outside Pyodide: compiles py_core/kernels/native/webnn_kernels.c (and any other versions
// of it given, e.g. `git show main:py_core/kernels/native/webnn_kernels.c > /tmp/base.c`) into standalone wasm
// modules, plain SIMD128 and relaxed, and times the benchmark shapes on each, variants interleaved round by
// round.  Times are the process's CPU time per call (process.cpuUsage: on this shared 2-core machine wall time
// swings 2-3x with the other work, CPU time within a few percent), minimum and median over the rounds, and the
// largest difference of each variant's output from the first's (0: bit-identical).  A tool for kernel work, not
// part of `make bench`; the browsers' own numbers come from `python -m web.bench perf`.
//   node --experimental-wasm-relaxed-simd scripts/bench_kernels.mjs [--rounds N] [--cases a,b] [SRC.c ...]
// --emit DIR only builds: the wasm files and variants.json into DIR, for scripts/bench_kernels_browser.py (the same
// comparison in Chromium and Firefox pages; the cases and the loop are scripts/kernel_cases.mjs).
import {execFileSync} from 'child_process';
import fs from 'fs';
import os from 'os';
import path from 'path';
import {compare, instantiate} from './kernel_cases.mjs';

const argv = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = argv.indexOf(name);
  return i < 0 ? dflt : argv.splice(i, 2)[1];
};
const rounds = Number(opt('--rounds', '30'));
const only = opt('--cases', '');
const emit = opt('--emit', '');
const sources = argv.length ? argv : ['py_core/kernels/native/webnn_kernels.c'];
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-kernels-'));

// the flags of scripts/build_native.sh, linked as a standalone module exporting the kernels
function build(src, relaxed) {
  const obj = path.join(tmp, 'k.o');
  const out = path.join(tmp, `${path.basename(src, '.c')}-${sources.indexOf(src)}${relaxed ? '.relaxed' : ''}.wasm`);
  const flags = ['-O3', '-std=c11', '-ffreestanding', '-ffp-contract=off', '-fwrapv', '-nostdlib', '--target=wasm32',
    '-msimd128', ...(relaxed ? ['-mrelaxed-simd', '-DWK_RELAXED'] : [])];
  execFileSync('clang', [...flags, '-c', src, '-o', obj]);
  if (relaxed) { // clang 14's f32x4.fma opcode renumbered to relaxed_madd, as build_native.sh does
    const b = fs.readFileSync(obj);
    for (let i = 0; i + 2 < b.length; i++) if (b[i] === 0xfd && b[i + 1] === 0xaf && b[i + 2] === 0x01) b.set([0xfd, 0x85, 0x02], i);
    fs.writeFileSync(obj, b);
  }
  execFileSync('wasm-ld', ['--no-entry', '--export-dynamic', '--export=__heap_base', '-o', out, obj]);
  return out;
}

const cpuMs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

const variants = [];
for (const src of sources) {
  for (const relaxed of [false, true]) {
    const file = build(src, relaxed);
    if (emit) {
      fs.copyFileSync(file, path.join(emit, path.basename(file)));
      variants.push({name: `${src}${relaxed ? ' relaxed' : ''}`, relaxed, file: path.basename(file)});
      continue;
    }
    variants.push({name: `${src}${relaxed ? ' relaxed' : ''}`, relaxed, file, ...(await instantiate(fs.readFileSync(file)))});
  }
}
if (emit) {
  fs.writeFileSync(path.join(emit, 'variants.json'), JSON.stringify(variants));
  fs.rmSync(tmp, {recursive: true, force: true});
  process.exit(0);
}
// --cases takes names, or prefixes ending in ':' (mnv2: every MobileNetV2 layer)
const wanted = (c) => !only || only.split(',').some((o) => o === c || (o.endsWith(':') && c.startsWith(o)));
const names = Object.keys(variants[0].cases).filter(wanted);
await compare(variants, names, rounds, cpuMs, console.log);
fs.rmSync(tmp, {recursive: true, force: true});
