import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  CompliancePipeline,
  DataLoader,
  MapRobotsSource,
  PackedDataset,
  PiiFilter,
  RobotsFilter,
  ShardedTokens,
  assignSplit,
  ToxicityFilter,
  parseLoaderState,
  readUdhr,
  selectSplit,
  writeShards,
  type Document,
} from './index';

const dir = mkdtempSync(path.join(tmpdir(), 'apertus-e2e-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Byte-level stand-in tokenizer: id = 4 + UTF-8 byte (ids 0–3 are <unk>, <s>, </s>, <pad>). */
const byteEncoder = { encode: (text: string) => Array.from(Buffer.from(text, 'utf8'), (b) => b + 4) };

describe('UDHR → compliance → shards → packed samples → resumable loader', () => {
  it('runs the whole data path on the bundled corpus', async () => {
    async function* corpus(): AsyncGenerator<Document> {
      let i = 0;
      for await (const d of readUdhr({ languages: ['eng', 'deu_1996', 'roh_sursilv'] })) {
        // give some documents URLs on a host that opted out of GPTBot
        yield i++ % 5 === 0 ? { ...d, url: `https://optout.example/udhr/${d.id}` } : d;
      }
    }
    const pipeline = new CompliancePipeline({
      robots: new RobotsFilter({ source: new MapRobotsSource({ 'optout.example': 'User-agent: GPTBot\nDisallow: /\n' }) }),
      toxicity: new ToxicityFilter(),
      pii: new PiiFilter(),
    });
    const train = selectSplit(pipeline.kept(corpus()), 'train', { fraction: 0.1, seed: 1 });
    const manifest = await writeShards(train, {
      directory: dir,
      vocabSize: 260,
      bodId: 1,
      eodId: 2,
      encoder: byteEncoder,
      maxTokensPerShard: 20_000,
    });
    // 3 languages × 31 documents; every 5th removed by robots.txt, none toxic
    expect(pipeline.stats.documents).toBe(93);
    expect(pipeline.stats.removedBy).toEqual({ robots: 19 });
    expect(manifest.shards.length).toBeGreaterThan(1);
    expect(manifest.dtype).toBe('uint16');

    const tokens = ShardedTokens.open(path.join(dir, 'shard.manifest.json'));
    // independent pass: the kept, train-split documents, encoded, wrapped in BoD/EoD
    const expected: string[] = [];
    for await (const d of corpus()) {
      const kept = !(d.url ?? '').startsWith('https://optout.example/');
      if (kept && assignSplit(d, { fraction: 0.1, seed: 1 }) === 'train') expected.push(d.text);
    }
    expect(tokens.numDocuments).toBe(expected.length);
    expected.forEach((text, i) => expect(Array.from(tokens.readDocument(i))).toEqual([1, ...byteEncoder.encode(text), 2]));
    expect(expected).toContain(
      'Article 1\nAll human beings are born free and equal in dignity and rights. They are endowed with reason and conscience and should act towards one another in a spirit of brotherhood.',
    );

    const ds = new PackedDataset(tokens, { seqLength: 256 });
    expect(ds.numSamples).toBe(Math.floor((tokens.numTokens - 1) / 256));
    const a = new DataLoader(ds, { seed: 28 });
    a.nextBatch(ds.numSamples + 3); // past an epoch boundary
    const saved = JSON.parse(JSON.stringify(a.state));
    const b = new DataLoader(ds, { state: parseLoaderState(saved) });
    for (let i = 0; i < 5; i++) {
      const x = a.next().sample;
      const y = b.next().sample;
      expect(Array.from(y.tokens)).toEqual(Array.from(x.tokens));
      expect(Array.from(y.lossMask)).toEqual(Array.from(x.lossMask));
      expect(Array.from(y.positionIds)).toEqual(Array.from(x.positionIds));
    }
    // every EoD input has loss mask 0 and the next position restarts at 0
    const s = ds.sample(3);
    for (let t = 0; t < 255; t++) {
      if (s.tokens[t] === 2) {
        expect(s.lossMask[t]).toBe(0);
        expect(s.positionIds[t + 1]).toBe(0);
      }
    }
    tokens.close();
  });
});
