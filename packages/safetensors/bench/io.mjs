// Benchmark: @apertus/safetensors (built dist) against plain-Node peers measured in the same run.
//
//   cd packages/safetensors && npx tsup && node bench/io.mjs [--write] [--quick]
//
// 1. header parse: parseHeader (strict JSON + full validation) vs JSON.parse of the same header
//    text (no validation, keeps duplicate keys silently), 20k-tensor header.
// 2. one tensor from a 256 MiB file: SafetensorsFile.open + read (lazy) vs
//    fs.readFileSync + deserialize + read (whole file), page cache warm.
// 3. every tensor of that file: SafetensorsFile reads vs fs.readFileSync of the whole file.
// 4. write 256 MiB: writeFile (streaming, atomic; fsync off and on) vs
//    fs.writeFileSync(serialize(...)) (one buffer, no fsync, not atomic).
// Ratios are peer time / our time (> 1: ours is faster). With --write, the figures go to
// tooling/bench/results/safetensors.json (then `npm run bench:page`).
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { loadAverage, loadRange, writeRecords } from '@apertus/bench';
import { deserialize, parseHeader, SafetensorsFile, serialize, writeFile } from '../dist/index.js';

const loadStart = loadAverage();
const argv = process.argv.slice(2);
const quick = argv.includes('--quick');
const reps = quick ? 3 : 9;

function median(fn) {
  const times = [];
  for (let i = 0; i < reps; i++) {
    const t0 = process.hrtime.bigint();
    fn();
    times.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)];
}

const rows = [];
function row(name, oursMs, peerName, peerMs, note = '') {
  rows.push({ name, oursMs, peerName, peerMs, ratio: peerMs / oursMs, note });
  console.log(`${name.padEnd(44)} ours ${oursMs.toFixed(2).padStart(9)} ms | ${peerName.padEnd(40)} ${peerMs.toFixed(2).padStart(9)} ms | ratio ${(peerMs / oursMs).toFixed(2)}`);
}

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'st-bench-'));
try {
  // 1. header parse
  const small = {};
  for (let i = 0; i < 20_000; i++) small[`model.layers.${i >> 4}.block.${i & 15}.weight`] = { dtype: 'BF16', shape: [2], data: new Uint16Array(2) };
  const smallFile = serialize(small);
  const n = Number(new DataView(smallFile.buffer).getBigUint64(0, true));
  const text = new TextDecoder().decode(smallFile.subarray(8, 8 + n));
  row(`parse 20k-tensor header (${(n / 1e6).toFixed(2)} MB)`, median(() => parseHeader(smallFile)), 'JSON.parse(text) only', median(() => JSON.parse(text)));

  // 2-3. reads from a 256 MiB file
  const tensors = {};
  const per = 4 << 20;
  for (let i = 0; i < 64; i++) tensors[`t.${String(i).padStart(2, '0')}`] = { dtype: 'F32', shape: [per / 4], data: new Float32Array(per / 4).fill(i) };
  const file = path.join(dir, 'big.safetensors');
  writeFile(file, tensors, undefined, { fsync: false });
  fs.readFileSync(file); // warm the page cache
  row(
    'open + read 1 tensor (4 MiB of 256 MiB)',
    median(() => {
      const f = SafetensorsFile.open(file);
      f.read('t.33');
      f.close();
    }),
    'readFileSync + deserialize + read',
    median(() => deserialize(fs.readFileSync(file)).read('t.33')),
  );
  row(
    'read all 64 tensors (256 MiB)',
    median(() => {
      const f = SafetensorsFile.open(file);
      for (const k of f.keys()) f.read(k);
      f.close();
    }),
    'readFileSync (whole file, no parse)',
    median(() => fs.readFileSync(file)),
  );

  // 4. writes
  const out = path.join(dir, 'out.safetensors');
  const peer = median(() => fs.writeFileSync(out, serialize(tensors)));
  row('writeFile 256 MiB (fsync off)', median(() => writeFile(out, tensors, undefined, { fsync: false })), 'writeFileSync(serialize())', peer);
  row('writeFile 256 MiB (fsync on, default)', median(() => writeFile(out, tensors)), 'writeFileSync(serialize())', peer, 'includes fsync');
} finally {
  fs.rmSync(dir, { recursive: true, force: true });
}

if (argv.includes('--write')) {
  const record = (id, target, r, peer, what = '') => ({ id, target, figure: `${r.oursMs.toFixed(2)} ms against ${r.peerMs.toFixed(2)} ms for ${peer}${what}`, ratio: `${r.ratio.toFixed(2)}×`, load: loadRange(loadStart) });
  console.log(`wrote ${writeRecords('safetensors', [
    record('safetensors-lazy-read', 'open + read 1 tensor (4 MiB of a 256 MiB file)', rows[1], 'readFileSync + deserialize + read'),
    record('safetensors-read-all', 'read all 64 tensors (256 MiB)', rows[2], 'readFileSync of the whole file (no parse)'),
    record('safetensors-write', 'writeFile 256 MiB (streaming, atomic, fsync on)', rows[4], 'writeFileSync(serialize())', ' (no fsync, not atomic)'),
    record('safetensors-header', 'parse a 20k-tensor header (1.84 MB)', rows[0], 'JSON.parse of the text alone', ' (ours validates every entry)'),
  ])}`);
}
