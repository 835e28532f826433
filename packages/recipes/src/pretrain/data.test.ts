import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DataLoader, PackedDataset, ShardedTokens, writeMegatronDataset } from '@apertus/data';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { InputError } from '@apertus/trainer';
import { resolvePretrainConfig, type PretrainConfig } from './config';
import { prepareData } from './data';

let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'apertus-data-'));
});
afterEach(() => {
  fs.rmSync(dir, { recursive: true, force: true });
});

const TEXTS = [
  'All human beings are born free and equal in dignity and rights.',
  'Everyone has the right to life, liberty and security of person. Write to alice@example.org for details.',
  'No one shall be held in slavery or servitude; slavery and the slave trade shall be prohibited.',
  'No one shall be subjected to torture or to cruel, inhuman or degrading treatment or punishment.',
  'Everyone has the right to recognition everywhere as a person before the law.',
  'All are equal before the law and are entitled without any discrimination to equal protection of the law.',
  'Everyone has the right to an effective remedy by the competent national tribunals.',
  'No one shall be subjected to arbitrary arrest, detention or exile.',
];

function jsonl(name: string, texts: readonly string[]): string {
  const f = path.join(dir, name);
  fs.writeFileSync(f, texts.map((text, i) => JSON.stringify({ id: `doc-${i}`, text })).join('\n') + '\n');
  return f;
}

function config(values: Record<string, unknown>): PretrainConfig {
  return resolvePretrainConfig([{ source: 'test', values: { out: path.join(dir, 'out'), vocabSize: 1300, validationFraction: 0.25, ...values } }]).config;
}

async function error(p: Promise<unknown>): Promise<InputError> {
  try {
    await p;
  } catch (e) {
    if (e instanceof InputError) return e;
    throw e;
  }
  throw new Error('expected a InputError');
}

describe('prepareData', () => {
  it('filters, splits, trains the tokenizer and writes shards that decode back to the documents', async () => {
    const cfg = config({ data: jsonl('c.jsonl', TEXTS) });
    const logs: string[] = [];
    const d = await prepareData(cfg, (m) => logs.push(m));
    expect(d.reused).toBe(false);
    expect(d.tokenizer.vocabSize).toBe(1300);
    expect(d.stats.read).toBe(8);
    expect(d.stats.train.documents + d.stats.validation.documents).toBe(8);
    expect(d.stats.validation.documents).toBeGreaterThan(0);
    expect(Object.keys(d.tokenizerFiles).sort()).toEqual(['tokenizer.json', 'tokenizer_config.json']);
    expect(logs.join('\n')).toMatch(/trained byte-level BPE/);
    // Every document appears exactly once across the two splits, PII replaced, between <s> (1) and </s> (2).
    const decoded: string[] = [];
    for (const manifest of [d.paths.trainManifest, d.paths.validationManifest]) {
      const t = ShardedTokens.open(manifest);
      for (let i = 0; i < t.numDocuments; i++) {
        const [a, b] = t.documentRange(i);
        const ids = Array.from(t.readTokens(a, b));
        expect(ids[0]).toBe(1);
        expect(ids[ids.length - 1]).toBe(2);
        decoded.push(d.tokenizer.decode(ids.slice(1, -1)));
      }
    }
    const expected = TEXTS.map((t) => t.replace('alice@example.org', '<email-pii>'));
    expect(decoded.sort()).toEqual([...expected].sort());
  });

  it('reuses prepared data when nothing changed and prepares again when the corpus changes', async () => {
    const file = jsonl('c.jsonl', TEXTS);
    const first = await prepareData(config({ data: file }));
    const again = await prepareData(config({ data: file }));
    expect(again.reused).toBe(true);
    expect(again.fingerprint).toBe(first.fingerprint);
    expect(again.stats).toEqual(first.stats);
    jsonl('c.jsonl', [...TEXTS, 'Everyone has the right to a nationality.']);
    const changed = await prepareData(config({ data: file }));
    expect(changed.reused).toBe(false);
    expect(changed.stats.read).toBe(9);
  });

  it('uses a given tokenizer and copies it into the run', async () => {
    const first = await prepareData(config({ data: jsonl('c.jsonl', TEXTS) }));
    const tokDir = path.join(dir, 'tok');
    fs.cpSync(first.paths.tokenizerDir, tokDir, { recursive: true });
    const cfg = resolvePretrainConfig([{ source: 'test', values: { out: path.join(dir, 'out2'), data: path.join(dir, 'c.jsonl'), tokenizer: tokDir, validationFraction: 0.25 } }]).config;
    const d = await prepareData(cfg);
    expect(d.tokenizer.vocabSize).toBe(1300);
    expect(d.tokenizerFiles['tokenizer.json']).toBe(fs.readFileSync(path.join(tokDir, 'tokenizer.json'), 'utf8'));
  });

  it('reads a folder of text files', async () => {
    fs.mkdirSync(path.join(dir, 'txt', 'sub'), { recursive: true });
    TEXTS.forEach((t, i) => fs.writeFileSync(path.join(dir, 'txt', i % 2 ? 'sub' : '', `${i}.txt`), t));
    const d = await prepareData(config({ data: path.join(dir, 'txt') }));
    expect(d.stats.read).toBe(8);
  });

  it('missing, unsupported, empty and unreadable data give InputError naming the path', async () => {
    const missing = await error(prepareData(config({ data: path.join(dir, 'nope.jsonl') })));
    expect(missing.message).toMatch(/nope\.jsonl: data not found or not accessible \(ENOENT\)/);
    fs.writeFileSync(path.join(dir, 'c.csv'), 'a,b\n');
    expect((await error(prepareData(config({ data: path.join(dir, 'c.csv') })))).message).toMatch(/unsupported data file/);
    fs.writeFileSync(path.join(dir, 'empty.jsonl'), '\n\n');
    expect((await error(prepareData(config({ data: path.join(dir, 'empty.jsonl') })))).message).toMatch(/empty\.jsonl.*no document/);
    fs.writeFileSync(path.join(dir, 'bad.jsonl'), '{"text": "ok"}\n{"text": 5}\n');
    expect((await error(prepareData(config({ data: path.join(dir, "bad.jsonl") })))).message).toMatch(/bad\.jsonl:2: field "text" is missing or not a string$/);
    fs.mkdirSync(path.join(dir, 'emptydir'));
    expect((await error(prepareData(config({ data: path.join(dir, 'emptydir') })))).message).toMatch(/emptydir.*no matching text file/);
    expect(fs.existsSync(path.join(dir, 'out', 'data', 'prepared.json'))).toBe(false);
  });

  it('an empty corpus after the compliance filters is an error and leaves no prepared data', async () => {
    const toxic = 'idiot stupid moron idiot stupid moron idiot stupid moron idiot';
    const file = jsonl('toxic.jsonl', [toxic, toxic]);
    const e = await error(prepareData(config({ data: file, tokenizer: null })));
    expect(e.message).toMatch(/2 read, 2 removed by the compliance filters/);
    expect(fs.existsSync(path.join(dir, 'out', 'data', 'prepared.json'))).toBe(false);
  });

  it('a document longer than --max-document-chars is refused (JSONL after reading, text files before reading)', async () => {
    const long = 'word '.repeat(2000);
    const file = jsonl('long.jsonl', [...TEXTS, long]);
    const e = await error(prepareData(config({ data: file, maxDocumentChars: 5000 })));
    expect(e.message).toMatch(/long\.jsonl \(document doc-8\): document of 10000 characters exceeds --max-document-chars 5000/);
    expect(fs.existsSync(path.join(dir, 'out', 'data'))).toBe(false);
    fs.mkdirSync(path.join(dir, 'txt'));
    fs.writeFileSync(path.join(dir, 'txt', 'big.txt'), long.repeat(2));
    const e2 = await error(prepareData(config({ data: path.join(dir, 'txt'), maxDocumentChars: 5000 })));
    expect(e2.message).toMatch(/big\.txt: document of 20000 bytes exceeds --max-document-chars 5000/);
  });

  it('a Megatron .bin/.idx prefix gives the training and validation batches of the source text, token for token', async () => {
    // Texts the compliance filters keep as they are (no PII), with the document index as id.
    const texts = TEXTS.filter((t) => !t.includes('@'));
    const file = path.join(dir, 'c.jsonl');
    fs.writeFileSync(file, texts.map((text, i) => JSON.stringify({ id: String(i), text })).join('\n') + '\n');
    const fromText = await prepareData(config({ data: file, validationFraction: 0.5 }));
    const tok = fromText.tokenizer;
    const prefix = path.join(dir, 'corpus');
    // As a Megatron preprocessing would write them: <s> tokens </s> per document.
    await writeMegatronDataset(prefix, texts.map((t) => tok.encodeIds(t, { addSpecialTokens: false, splitSpecialTokens: false })), { vocabSize: tok.vocabSize, bodId: 1, eodId: 2 });
    for (const data of [prefix, `${prefix}.idx`, `${prefix}.bin`]) {
      const fromBin = await prepareData(config({ data, validationFraction: 0.5, tokenizer: fromText.paths.tokenizerDir, out: path.join(dir, 'out-bin') }));
      expect(fromBin.stats.read).toBe(texts.length);
      expect(fromBin.stats.train).toEqual(fromText.stats.train);
      expect(fromBin.stats.validation).toEqual(fromText.stats.validation);
      expect(fromBin.stats.validation.documents).toBeGreaterThan(0);
      const batches = (manifest: string): number[][] => {
        const loader = new DataLoader(new PackedDataset(ShardedTokens.open(manifest), { seqLength: 16 }), { seed: 3 });
        return Array.from({ length: 12 }, () => loader.nextBatch(4).flatMap((s) => [...Array.from(s.sample.tokens), ...Array.from(s.sample.labels)]));
      };
      expect(batches(fromBin.paths.trainManifest)).toEqual(batches(fromText.paths.trainManifest));
      expect(batches(fromBin.paths.validationManifest)).toEqual(batches(fromText.paths.validationManifest));
      fs.rmSync(path.join(dir, 'out-bin'), { recursive: true });
    }
  });

  it('a Megatron prefix without --tokenizer, or with a corrupted index, is an InputError naming the file', async () => {
    const prefix = path.join(dir, 'corpus');
    await writeMegatronDataset(prefix, [[5, 6, 7], [8, 9]], { vocabSize: 1300, bodId: 1, eodId: 2 });
    expect((await error(prepareData(config({ data: prefix })))).message).toMatch(/corpus\.idx: a Megatron dataset holds token ids: give the tokenizer/);
    const tokDir = (await prepareData(config({ data: jsonl('c.jsonl', TEXTS) }))).paths.tokenizerDir;
    const idx = fs.readFileSync(`${prefix}.idx`);
    idx.write('X', 0, 'latin1');
    fs.writeFileSync(`${prefix}.idx`, idx);
    const e = await error(prepareData(config({ data: prefix, tokenizer: tokDir, out: path.join(dir, 'out-bin') })));
    expect(e.message).toMatch(/corpus\.idx: magic: not an MMIDIDX index/);
  });
});
