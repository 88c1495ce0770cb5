// The kernel shapes bench_kernels.mjs times, and its round-by-round comparison of variants: plain ES, so the same
// code runs under Node (scripts/bench_kernels.mjs) and in a browser page (scripts/bench_kernels_browser.py).
// a fixed pseudo-random sequence, the same inputs for every variant
function rng(seed) {
  let s = seed;
  return () => (s = (s * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff - 0.5;
}

export async function instantiate(bytes) {
  const {instance} = await WebAssembly.instantiate(bytes, {env: {}});
  const e = instance.exports;
  e.memory.grow(Math.max(0, ((320 << 20) - e.memory.buffer.byteLength) >> 16));
  let top = (e.__heap_base.value + 63) & ~63;
  const rand = rng(12345);
  const alloc = (n, fill = true) => {
    const p = top;
    top = (top + n * 4 + 63) & ~63;
    if (fill) {
      const a = new Float32Array(e.memory.buffer, p, n);
      for (let i = 0; i < n; i++) a[i] = rand();
    }
    return p;
  };
  const f32 = (p, n) => new Float32Array(e.memory.buffer, p, n);
  const B = BigInt;
  const cases = {};
  { // matmul512: the constant right-hand side packed once (wk_pack_b), as the bench's graph runs it
    const [M, N, K] = [512, 512, 512];
    const a = alloc(M * K), b = alloc(K * N), c = alloc(M * N, false);
    const pk = alloc(Number(e.wk_packed_b_size(B(N), B(K))), false);
    e.wk_pack_b(B(N), B(K), b, B(N), pk);
    cases.matmul512 = {flops: 2 * M * N * K, out: [c, M * N],
      run: () => e.wk_sgemm_packed(B(M), B(N), B(K), a, B(K), 1n, pk, c, B(N), 0, 0, 0, 0, 0)};
  }
  // NCHW groups-1 convs through wk_conv_nchw: [C, H, O, stride, name], 3x3, padding 1, bias, relu6
  for (const [C, H, O, S, name] of [[64, 56, 64, 1, 'conv3x3_64'], [3, 224, 32, 2, 'conv_first']]) {
    const OH = Math.floor((H + 2 - 3) / S) + 1;
    const x = alloc(C * H * H), w = alloc(O * C * 9), y = alloc(O * OH * OH, false), bias = alloc(O);
    // (C, H, W, KH, KW, strides, dilations, OH, OW) since the stride-1 path; (OH * OW, K) before it
    const size = e.wk_conv_nchw_work.length === 2 ? e.wk_conv_nchw_work(B(OH * OH), B(C * 9))
      : e.wk_conv_nchw_work(B(C), B(H), B(H), 3n, 3n, B(S), B(S), 1n, 1n, B(OH), B(OH));
    const work = alloc(Number(size), false);
    cases[name] = {flops: 2 * O * OH * OH * C * 9, out: [y, O * OH * OH],
      run: () => e.wk_conv_nchw(B(C), B(H), B(H), x, 3n, 3n, B(S), B(S), 1n, 1n, 1n, 1n, B(OH), B(OH), w, B(O), y,
          bias, 1, 0, 6, work)};
  }
  // 3x3 depthwise NCHW (wk_depthwise_nchw), padding 1, bias, relu6: the bench's case and MobileNetV2's layers
  for (const [C, H, S] of [[144, 56, 1], [32, 112, 1], [96, 112, 2], [144, 56, 2], [384, 14, 1], [960, 7, 1]]) {
    const OH = Math.floor((H + 2 - 3) / S) + 1;
    const x = alloc(C * H * H), w = alloc(C * 9), y = alloc(C * OH * OH, false), bias = alloc(C);
    const work = alloc(Number(e.wk_depthwise_nchw_work(B(OH), B(OH), B(S), B(S))), false);
    cases[`dw${C}_${H}s${S}`] = {flops: 2 * C * OH * OH * 9, out: [y, C * OH * OH],
      run: () => e.wk_depthwise_nchw(1n, B(C), B(H), B(H), x, 3n, 3n, w, B(S), B(S), 1n, 1n, 1n, 1n, B(OH), B(OH),
          y, bias, 1, 0, 6, work)};
  }
  // MobileNetV2's 1x1 convs in NCHW: weights [M, K] x activation [K, N] packed per call (wk_sgemm), bias, relu6
  for (const [M, K, N] of [[96, 16, 12544], [144, 24, 3136], [96, 576, 196], [960, 160, 49]]) {
    const a = alloc(M * K), b = alloc(K * N), c = alloc(M * N, false), bias = alloc(M);
    const work = alloc(Number(e.wk_sgemm_work(B(N), B(K))), false);
    cases[`1x1_${M}x${K}x${N}`] = {flops: 2 * M * N * K, out: [c, M * N],
      run: () => e.wk_sgemm(B(M), B(N), B(K), a, B(K), 1n, b, B(N), c, B(N), bias, 1, 1, 0, 6, work)};
  }
  // channels-last 1x1 convs (NHWC, the gallery's TFLite models): pixels [M, K] x the weights packed once [K, O],
  // bias per column, relu6 (wk_sgemm_packed)
  for (const [M, K, O] of [[12544, 16, 96], [3136, 24, 144], [196, 576, 96]]) {
    const a = alloc(M * K), b = alloc(K * O), c = alloc(M * O, false), bias = alloc(O);
    const pk = alloc(Number(e.wk_packed_b_size(B(O), B(K))), false);
    e.wk_pack_b(B(O), B(K), b, B(O), pk);
    cases[`nhwc1x1_${M}x${K}x${O}`] = {flops: 2 * M * O * K, out: [c, M * O],
      run: () => e.wk_sgemm_packed(B(M), B(O), B(K), a, B(K), 1n, pk, c, B(O), bias, 2, 1, 0, 6)};
  }
  // MobileNetV2's layers as the polyfill runs them (NCHW, batch 1): `mnv2:` cases, each with its count in the
  // network; compare() adds a variant's minimums up into the whole network's kernel time
  const layers = [['conv', 3, 224, 32, 2, 1]];
  let [ch, size] = [32, 112];
  const block = (t, out, stride) => {
    const hidden = ch * t;
    if (t !== 1) layers.push(['1x1', hidden, ch, size]);
    layers.push(['dw', hidden, size, stride]);
    size = Math.floor((size + 2 - 3) / stride) + 1;
    layers.push(['1x1', out, hidden, size]);
    ch = out;
  };
  for (const [t, c, n, s] of [[1, 16, 1, 1], [6, 24, 2, 2], [6, 32, 3, 2], [6, 64, 4, 2], [6, 96, 3, 1],
    [6, 160, 3, 2], [6, 320, 1, 1]]) {
    for (let i = 0; i < n; i++) block(t, c, i ? 1 : s);
  }
  layers.push(['1x1', 1280, 320, 7], ['fc', 1000, 1280]);
  const layerCase = (kind, d) => {
    const [a0, a1, a2] = d;
    if (kind === '1x1') { // [O, C] x [C, H*W] through wk_sgemm with its packing buffer, bias, relu6
      const [M, K, N] = [a0, a1, a2 * a2];
      const a = alloc(M * K), b = alloc(K * N), c = alloc(M * N, false), bias = alloc(M);
      const work = alloc(Number(e.wk_sgemm_work(B(N), B(K))), false);
      return {flops: 2 * M * N * K, out: [c, M * N],
        run: () => e.wk_sgemm(B(M), B(N), B(K), a, B(K), 1n, b, B(N), c, B(N), bias, 1, 1, 0, 6, work)};
    } else if (kind === 'dw') {
      const [C, H, S] = [a0, a1, a2];
      const OH = Math.floor((H + 2 - 3) / S) + 1;
      const x = alloc(C * H * H), w = alloc(C * 9), y = alloc(C * OH * OH, false), bias = alloc(C);
      const work = alloc(Number(e.wk_depthwise_nchw_work(B(OH), B(OH), B(S), B(S))), false);
      return {flops: 2 * C * OH * OH * 9, out: [y, C * OH * OH],
        run: () => e.wk_depthwise_nchw(1n, B(C), B(H), B(H), x, 3n, 3n, w, B(S), B(S), 1n, 1n, 1n, 1n, B(OH),
            B(OH), y, bias, 1, 0, 6, work)};
    } else if (kind === 'conv') {
      return cases.conv_first;
    }
    // the classifier: [1, 1280] x packed [1280, 1000] + bias
    const [N, K] = [a0, a1];
    const a = alloc(K), b = alloc(K * N), c = alloc(N, false), bias = alloc(N);
    const pk = alloc(Number(e.wk_packed_b_size(B(N), B(K))), false);
    e.wk_pack_b(B(N), B(K), b, B(N), pk);
    return {flops: 2 * N * K, out: [c, N],
      run: () => e.wk_sgemm_packed(1n, B(N), B(K), a, B(K), 1n, pk, c, B(N), bias, 2, 0, 0, 0)};
  };
  const counts = new Map();
  for (const l of layers) counts.set(l.join(' '), (counts.get(l.join(' ')) || 0) + 1);
  for (const [key, count] of counts) {
    const [kind, ...d] = key.split(' ');
    cases[`mnv2:${kind}_${d.join('_')}`] = {...layerCase(kind, d.map(Number)), count};
  }
  // the whole network's layers one after the other, each with buffers of its own (its weights and activations
  // out of cache by its turn, as in a run of the graph): `layers` makes compare() print each one's time too
  const seq = layers.map(([kind, ...d]) => ({name: `${kind}_${d.join('_')}`, ...layerCase(kind, d)}));
  cases['mnv2_sequence'] = {flops: seq.reduce((t, l) => t + l.flops, 0), out: seq[seq.length - 1].out,
    layers: seq, run: () => seq.forEach((l) => l.run())};
  if (top > e.memory.buffer.byteLength) throw new Error('the cases need more memory than was grown');
  return {cases, f32};
}

// times every case on every variant (each {name, relaxed, cases, f32}), variants interleaved round by round;
// clock() in ms (Node: CPU time; a page: performance.now()), log(line) prints
export async function compare(variants, names, rounds, clock, log) {
  const totals = new Map(); // variant name -> [sum of count x min, of count x median] over the counted cases
  for (const c of names) {
    await new Promise((r) => setTimeout(r)); // a browser page stays responsive between cases
    for (const relaxed of [false, true]) {
      const vs = variants.filter((v) => v.relaxed === relaxed);
      const times = vs.map(() => []);
      for (const v of vs) { // past the engine's baseline tier (V8 tiers a hot function up after some calls)
        const t0 = performance.now();
        for (let i = 0; i < 3 || performance.now() - t0 < 250; i++) v.cases[c].run();
      }
      for (let r = 0; r < rounds; r++) {
        vs.forEach((v, i) => {
          const ls = v.cases[c].layers;
          if (ls) { // each layer timed in the sequence
            v.layerTimes ||= ls.map(() => []);
            let total = 0;
            ls.forEach((l, k) => {
              const t0 = clock();
              l.run();
              const t = clock() - t0;
              v.layerTimes[k].push(t);
              total += t;
            });
            times[i].push(total);
            return;
          }
          const t0 = clock();
          v.cases[c].run();
          times[i].push(clock() - t0);
        });
      }
      const ref = vs[0].f32(...vs[0].cases[c].out);
      vs.forEach((v, i) => {
        const got = v.f32(...v.cases[c].out);
        let diff = 0;
        for (let k = 0; k < ref.length; k++) diff = Math.max(diff, Math.abs(got[k] - ref[k]));
        const t = times[i].sort((a, b) => a - b);
        const gflops = v.cases[c].flops / t[0] / 1e6, count = v.cases[c].count;
        if (count) {
          const sum = totals.get(v.name) || [0, 0];
          totals.set(v.name, [sum[0] + count * t[0], sum[1] + count * t[t.length >> 1]]);
        }
        (v.cases[c].layers || []).forEach((l, k) => {
          const lt = v.layerTimes[k].sort((x, y) => x - y);
          log(`  ${c}/${k} ${l.name.padEnd(20)} ${v.name.padEnd(44)} min ${lt[0].toFixed(3).padStart(7)} ms  median ` +
              `${lt[lt.length >> 1].toFixed(3).padStart(7)} ms  ${(l.flops / lt[0] / 1e6).toFixed(1).padStart(5)} GFLOP/s`);
        });
        delete v.layerTimes;
        log(`${c.padEnd(18)} ${v.name.padEnd(52)} min ${t[0].toFixed(3).padStart(7)} ms  median ` +
            `${t[t.length >> 1].toFixed(3).padStart(7)} ms  ${gflops.toFixed(1).padStart(5)} GFLOP/s  diff ${diff}` +
            (count ? `  x${count}` : ''));
      });
    }
  }
  for (const [name, [min, median]] of totals) {
    log(`${'counted cases'.padEnd(18)} ${name.padEnd(52)} min ${min.toFixed(3).padStart(7)} ms  median ` +
        `${median.toFixed(3).padStart(7)} ms  (count x time, summed)`);
  }
}
