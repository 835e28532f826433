import { describe, expect, it } from 'vitest';
import type { Document } from '../document';
import { unitHash } from '../hash';
import { MapRobotsSource } from '../robots/sources';
import { RobotsFilter } from '../robots/robots-filter';
import { PiiFilter } from './pii';
import { CompliancePipeline, PIPELINE_ORDER } from './pipeline';
import type { DocumentFilter } from './report';
import { SamplerFilter } from './sampler';
import { ToxicityFilter, WordListToxicityScorer } from './toxicity';

function recorder(name: string, log: string[]): DocumentFilter {
  return { name, apply: (document) => (log.push(name), { document, report: { kept: true } }) };
}

describe('CompliancePipeline', () => {
  it('applies the steps in the Apertus order whatever order they are given in', async () => {
    const log: string[] = [];
    const p = new CompliancePipeline({
      pii: recorder('pii', log),
      sampler: recorder('sampler', log),
      toxicity: recorder('toxicity', log),
      quality: recorder('quality', log),
      robots: recorder('robots', log),
    });
    await p.apply({ id: 'x', text: 'y' });
    expect(log).toEqual(['robots', 'quality', 'toxicity', 'sampler', 'pii']);
    expect(PIPELINE_ORDER).toEqual(['robots', 'quality', 'toxicity', 'sampler', 'pii']);
  });

  it('stops at the first removal, reports why, and aggregates stats', async () => {
    const p = new CompliancePipeline({
      robots: new RobotsFilter({ source: new MapRobotsSource({ 'optout.example': 'User-agent: GPTBot\nDisallow: /\n' }) }),
      toxicity: new ToxicityFilter({ scorer: new WordListToxicityScorer({ words: ['awful'] }), threshold: 0.5 }),
      pii: new PiiFilter(),
    });
    const docs: Document[] = [
      { id: 'opted-out', text: 'mail a@b.com', url: 'https://optout.example/p' },
      { id: 'toxic', text: 'awful awful', url: 'https://ok.example/p' },
      { id: 'pii', text: 'write to a@b.com or c@d.org from 1.2.3.4' },
      { id: 'clean', text: 'hello world' },
    ];
    const results = [];
    for await (const r of p.process(docs)) results.push(r);
    expect(results.map((r) => r.report)).toEqual([
      { kept: false, filter: 'robots', reason: 'robots:url', detail: 'disallowed for GPTBot' },
      { kept: false, filter: 'toxicity', reason: 'toxicity', detail: 'score 1 >= threshold 0.5' },
      { kept: true, changes: [{ kind: 'email', count: 2 }, { kind: 'ipv4', count: 1 }] },
      { kept: true },
    ]);
    // removed documents are not rewritten: PII runs last, on kept documents only
    expect(results[0]!.document.text).toBe('mail a@b.com');
    expect(results[2]!.document.text).toBe('write to <email-pii> or <email-pii> from <ip-pii>');
    expect(p.stats).toEqual({
      documents: 4,
      kept: 2,
      removed: 2,
      removedBy: { robots: 1, toxicity: 1 },
      reasons: { 'robots:url': 1, toxicity: 1 },
      changes: { email: 2, ipv4: 1 },
      changedDocuments: 1,
    });
    const kept = [];
    for await (const d of new CompliancePipeline({ pii: new PiiFilter() }).kept(docs)) kept.push(d.id);
    expect(kept).toEqual(['opted-out', 'toxic', 'pii', 'clean']);
  });

  it('sampler keeps exactly the documents whose id hashes below the rate', async () => {
    const s = new SamplerFilter({ rate: 0.3135, seed: 7 });
    const ids = Array.from({ length: 2000 }, (_, i) => `doc-${i}`);
    const kept = ids.filter((id) => s.apply({ id, text: '' }).report.kept);
    expect(kept).toEqual(ids.filter((id) => unitHash(7, id) < 0.3135));
    // a uniform hash keeps close to the rate (binomial sd ≈ 0.010 at n = 2000)
    expect(Math.abs(kept.length / ids.length - 0.3135)).toBeLessThan(0.04);
    expect(() => new SamplerFilter({ rate: -0.1 })).toThrow(/rate/);
  });
});
