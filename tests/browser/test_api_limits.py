"""opSupportLimits() tells the truth, checked from the limits themselves: for every operator and every operand it
lists, every reported data type builds (at the smallest and largest reported rank of the primary operand) and
the graph of all those calls runs; every data type it does not report, and a rank just outside the range, throws
TypeError; every output's data type and rank are within the reported output limits.
https://www.w3.org/TR/webnn/#api-mlcontext-opsupportlimits

Only the call recipes below are written by hand (one per operator: shapes that satisfy the operator's other
rules); which data types and ranks to try comes from opSupportLimits().
"""

from __future__ import annotations

from typing import Any

import pytest

pytestmark = pytest.mark.browser

LIMITS_TRUTH_JS = r"""
async () => {
  const P = webnnPolyfill;
  const ctx = await P.ml.createContext();
  const limits = ctx.opSupportLimits();
  const ALL = ['float32', 'float16', 'int32', 'uint32', 'int64', 'uint64', 'int8', 'uint8'];
  const ONE = {float32: () => new Float32Array([1]), float16: () => new Uint16Array([0x3c00]),
               int32: () => new Int32Array([1]), uint32: () => new Uint32Array([1]), int64: () => new BigInt64Array([1n]),
               uint64: () => new BigUint64Array([1n]), int8: () => new Int8Array([1]), uint8: () => new Uint8Array([1])};
  const VIEW = {float32: Float32Array, float16: Uint16Array, int32: Int32Array, uint32: Uint32Array,
                int64: BigInt64Array, uint64: BigUint64Array, int8: Int8Array, uint8: Uint8Array};
  const size = (shape) => shape.reduce((a, c) => a * c, 1);
  // a constant operand of ones: every recipe input is a constant, so each graph runs without inputs
  const K = (b, dataType, shape) => {
    const data = new VIEW[dataType](size(shape));
    data.fill(ONE[dataType]()[0]);
    return b.constant({dataType, shape}, data);
  };
  const S = (r, d = 2) => Array(r).fill(d);
  const at = (r, base) => (r === base.length ? base : S(r));  // the recipe's shape at its rank, else rank r

  const unary = (op) => (b, T, r) => b[op](K(b, T('input'), S(r)));
  const binary = (op) => (b, T, r) => b[op](K(b, T('a'), S(r)), K(b, T('b'), S(r)));
  const logical1 = (op) => (b, T, r) => b[op](K(b, T('a'), S(r)));
  const pool = (op) => (b, T, r) => b[op](K(b, T('input'), at(r, [1, 2, 3, 3])), {windowDimensions: [2, 2]});
  const R = {};
  for (const op of ['add', 'sub', 'mul', 'div', 'max', 'min', 'pow', 'equal', 'notEqual', 'greater', 'greaterOrEqual',
                    'lesser', 'lesserOrEqual', 'logicalAnd', 'logicalOr', 'logicalXor']) R[op] = binary(op);
  for (const op of ['logicalNot', 'isNaN', 'isInfinite']) R[op] = logical1(op);
  for (const op of ['abs', 'ceil', 'cos', 'erf', 'exp', 'floor', 'identity', 'log', 'neg', 'reciprocal', 'roundEven',
                    'sign', 'sin', 'sqrt', 'tan', 'relu', 'sigmoid', 'tanh', 'gelu', 'softplus', 'softsign', 'hardSwish',
                    'elu', 'leakyRelu', 'hardSigmoid', 'linear', 'clamp', 'reduceL1', 'reduceL2', 'reduceLogSum',
                    'reduceLogSumExp', 'reduceMax', 'reduceMean', 'reduceMin', 'reduceProduct', 'reduceSum',
                    'reduceSumSquare', 'transpose', 'reverse', 'triangular']) R[op] = unary(op);
  for (const op of ['averagePool2d', 'l2Pool2d', 'maxPool2d']) R[op] = pool(op);
  Object.assign(R, {
    prelu: (b, T, r) => b.prelu(K(b, T('input'), S(r)), K(b, T('slope'), S(r))),
    softmax: (b, T, r) => b.softmax(K(b, T('input'), S(r)), Math.max(r - 1, 0)),
    argMin: (b, T, r) => b.argMin(K(b, T('input'), S(r)), 0, {outputDataType: T('output')}),
    argMax: (b, T, r) => b.argMax(K(b, T('input'), S(r)), 0, {outputDataType: T('output')}),
    cumulativeSum: (b, T, r) => b.cumulativeSum(K(b, T('input'), S(r)), 0),
    cast: (b, T, r) => b.cast(K(b, T('input'), S(r)), T('output')),
    batchNormalization: (b, T, r) => b.batchNormalization(K(b, T('input'), S(r)), K(b, T('mean'), [2]),
      K(b, T('variance'), [2]), {axis: Math.max(r - 1, 0), scale: K(b, T('scale'), [2]), bias: K(b, T('bias'), [2])}),
    instanceNormalization: (b, T, r) => b.instanceNormalization(K(b, T('input'), S(r)),
      {scale: K(b, T('scale'), [2]), bias: K(b, T('bias'), [2])}),
    layerNormalization: (b, T, r) => b.layerNormalization(K(b, T('input'), S(r)), {axes: r ? [r - 1] : [],
      scale: K(b, T('scale'), r ? [2] : []), bias: K(b, T('bias'), r ? [2] : [])}),
    conv2d: (b, T, r) => b.conv2d(K(b, T('input'), at(r, [1, 2, 3, 3])), K(b, T('filter'), [2, 2, 1, 1]),
      {bias: K(b, T('bias'), [2])}),
    convTranspose2d: (b, T, r) => b.convTranspose2d(K(b, T('input'), at(r, [1, 2, 3, 3])),
      K(b, T('filter'), [2, 2, 1, 1]), {bias: K(b, T('bias'), [2])}),
    resample2d: (b, T, r) => b.resample2d(K(b, T('input'), at(r, [1, 1, 2, 2])), {sizes: [4, 4]}),
    gemm: (b, T, r) => b.gemm(K(b, T('a'), at(r, [2, 3])), K(b, T('b'), [3, 4]), {c: K(b, T('c'), [4])}),
    matmul: (b, T, r) => b.matmul(K(b, T('a'), r < 2 ? S(r) : [...S(r - 2, 1), 2, 3]),
      K(b, T('b'), r < 2 ? S(r) : [...S(r - 2, 1), 3, 2])),
    reshape: (b, T, r) => b.reshape(K(b, T('input'), S(r)), [2 ** r]),
    slice: (b, T, r) => b.slice(K(b, T('input'), S(r)), S(r, 0), S(r, 1)),
    pad: (b, T, r) => b.pad(K(b, T('input'), S(r)), S(r, 1), S(r, 1)),
    concat: (b, T, r) => b.concat([K(b, T('inputs'), S(r)), K(b, T('inputs'), S(r))], 0),
    split: (b, T, r) => b.split(K(b, T('input'), S(r)), 2),
    expand: (b, T, r) => b.expand(K(b, T('input'), S(r, 1)), S(r)),
    tile: (b, T, r) => b.tile(K(b, T('input'), S(r)), S(r)),
    where: (b, T, r) => b.where(K(b, T('condition'), S(r)), K(b, T('trueValue'), S(r)), K(b, T('falseValue'), S(r))),
    gather: (b, T, r) => b.gather(K(b, T('input'), S(r)), K(b, T('indices'), [2])),
    gatherElements: (b, T, r) => b.gatherElements(K(b, T('input'), S(r)), K(b, T('indices'), S(r))),
    gatherND: (b, T, r) => b.gatherND(K(b, T('input'), S(r)), K(b, T('indices'), [2, 1])),
    scatterElements: (b, T, r) => b.scatterElements(K(b, T('input'), S(r)), K(b, T('indices'), S(r)),
      K(b, T('updates'), S(r))),
    scatterND: (b, T, r) => b.scatterND(K(b, T('input'), S(r)), K(b, T('indices'), [2, 1]),
      K(b, T('updates'), [2, ...S(Math.max(r - 1, 0))])),
    quantizeLinear: (b, T, r) => b.quantizeLinear(K(b, T('input'), S(r)), K(b, T('scale'), S(r, 1)),
      K(b, T('zeroPoint'), S(r, 1))),
    dequantizeLinear: (b, T, r) => b.dequantizeLinear(K(b, T('input'), S(r)), K(b, T('scale'), S(r, 1)),
      K(b, T('zeroPoint'), S(r, 1))),
    gru: (b, T, r) => b.gru(K(b, T('input'), at(r, [2, 2, 3])), K(b, T('weight'), [1, 6, 3]),
      K(b, T('recurrentWeight'), [1, 6, 2]), 2, 2, {bias: K(b, T('bias'), [1, 6]),
      recurrentBias: K(b, T('recurrentBias'), [1, 6]), initialHiddenState: K(b, T('initialHiddenState'), [1, 2, 2]),
      returnSequence: true}),
    gruCell: (b, T, r) => b.gruCell(K(b, T('input'), at(r, [2, 3])), K(b, T('weight'), [6, 3]),
      K(b, T('recurrentWeight'), [6, 2]), K(b, T('hiddenState'), [2, 2]), 2,
      {bias: K(b, T('bias'), [6]), recurrentBias: K(b, T('recurrentBias'), [6])}),
    lstm: (b, T, r) => b.lstm(K(b, T('input'), at(r, [2, 2, 3])), K(b, T('weight'), [1, 8, 3]),
      K(b, T('recurrentWeight'), [1, 8, 2]), 2, 2, {bias: K(b, T('bias'), [1, 8]),
      recurrentBias: K(b, T('recurrentBias'), [1, 8]), peepholeWeight: K(b, T('peepholeWeight'), [1, 6]),
      initialHiddenState: K(b, T('initialHiddenState'), [1, 2, 2]),
      initialCellState: K(b, T('initialCellState'), [1, 2, 2]), returnSequence: true}),
    lstmCell: (b, T, r) => b.lstmCell(K(b, T('input'), at(r, [2, 3])), K(b, T('weight'), [8, 3]),
      K(b, T('recurrentWeight'), [8, 2]), K(b, T('hiddenState'), [2, 2]), K(b, T('cellState'), [2, 2]), 2,
      {bias: K(b, T('bias'), [8]), recurrentBias: K(b, T('recurrentBias'), [8]),
       peepholeWeight: K(b, T('peepholeWeight'), [6])}),
  });
  // operators whose output data type is an argument: their "output" limits are tried like an operand's
  const OUTPUT_TYPED = new Set(['cast', 'argMin', 'argMax']);
  const PRIMARY = {where: 'condition', concat: 'inputs'};

  const problems = [];
  const stats = {operators: 0, accepted: 0, rejected: 0, graphs: 0, outputs: 0};
  for (const [op, lim] of Object.entries(limits)) {
    if (['preferredInputLayout', 'maxTensorByteLength', 'input', 'constant', 'output'].includes(op)) continue;
    const recipe = R[op];
    if (!recipe) { problems.push(`${op}: no recipe in this test`); continue; }
    stats.operators++;
    // the draft's `outputs`, or Chromium's output0, output1... (the default mode; the same limits each)
    const outNames = Object.keys(lim).filter((n) => /^output(s|\d+)?$/.test(n));
    const outName = outNames[0];
    const operands = Object.keys(lim).filter((n) => !outNames.includes(n));
    const varied = OUTPUT_TYPED.has(op) ? [...operands, outName] : operands;
    const primary = PRIMARY[op] || operands[0];
    const {min, max} = lim[primary].rankRange;
    // the type of every operand when `name` has type `dt`: dt where its limits allow it, else its first type
    const typing = (name, dt) => (n) => (n === name ? dt : (lim[n] && lim[n].dataTypes.includes(dt) ? dt
      : (lim[n] ? lim[n].dataTypes[0] : dt)));
    const builder = new P.MLGraphBuilder(ctx);
    const scratch = new P.MLGraphBuilder(ctx);
    const outputs = {};
    for (const name of varied) {
      for (const dt of lim[name].dataTypes) {
        for (const r of new Set([min, max])) {
          let result;
          try { result = recipe(builder, typing(name, dt), r); }
          catch (e) { problems.push(`${op}: ${name} ${dt} rank ${r} is reported but rejected: ${e.message}`); continue; }
          stats.accepted++;
          for (const o of Array.isArray(result) ? result : [result]) {
            if (!lim[outName].dataTypes.includes(o.dataType)) problems.push(`${op}: output type ${o.dataType} not reported`);
            const rr = lim[outName].rankRange;
            if (o.shape.length < rr.min || o.shape.length > rr.max) problems.push(`${op}: output rank ${o.shape.length} outside [${rr.min}, ${rr.max}]`);
            outputs[`o${Object.keys(outputs).length}`] = o;
          }
        }
      }
      for (const dt of ALL.filter((t) => !lim[name].dataTypes.includes(t))) {
        try { recipe(scratch, typing(name, dt), min); problems.push(`${op}: ${name} ${dt} is not reported but accepted`); }
        catch (e) { if (!(e instanceof TypeError)) problems.push(`${op}: ${name} ${dt} threw ${e.name}`); else stats.rejected++; }
      }
    }
    for (const r of [min - 1, max + 1]) {
      if (r < 0) continue;
      try { recipe(scratch, typing(primary, lim[primary].dataTypes[0]), r); problems.push(`${op}: ${primary} rank ${r} is outside [${min}, ${max}] but accepted`); }
      catch (e) { if (!(e instanceof TypeError)) problems.push(`${op}: rank ${r} threw ${e.name}`); else stats.rejected++; }
    }
    if (!Object.keys(outputs).length) continue;
    // every accepted call runs: one graph per operator with all of them as outputs
    try {
      const graph = await builder.build(outputs);
      const views = Object.fromEntries(Object.entries(outputs).map(([n, o]) => [n, new VIEW[o.dataType](size(o.shape))]));
      await ctx.compute(graph, {}, views);
      graph.destroy();
      stats.graphs++;
      stats.outputs += Object.keys(outputs).length;
    } catch (e) {
      problems.push(`${op}: graph of all reported types failed to run: ${e.name}: ${e.message}`);
    }
  }
  ctx.destroy();
  return {problems, stats};
}
"""


def test_op_support_limits_are_truthful(webnn_page: Any) -> None:
    out = webnn_page.evaluate(LIMITS_TRUTH_JS)
    assert out["problems"] == [], "\n".join(out["problems"])
    stats = out["stats"]
    assert stats["operators"] == 95 and stats["graphs"] == 95, stats
    assert stats["accepted"] > 500 and stats["rejected"] > 300, stats
