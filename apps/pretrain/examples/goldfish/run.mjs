// The Goldfish memorization experiment (Hans et al. 2024, training-recipe §2.6) at small scale:
// a tiny Apertus model is trained for 160 epochs on 8 UDHR articles, once with the standard loss
// and once with the Goldfish loss (k = 4, h = 13), from the same initialisation; then each
// document's last 50 tokens are decoded greedily from the preceding prefix and compared with the
// real ones (exact match, longest common substring, Rouge-L).
//
//   npm run build && node apps/pretrain/examples/goldfish/run.mjs [--documents 8] [--steps 160] [--k 4] [--h 13]
//
// The same experiment is `apertus-pretrain goldfish`; a fast version runs in the test suite.

import { runGoldfishExperiment } from '@apertus/recipes';

const arg = (name) => {
  const i = process.argv.indexOf(name);
  return i >= 0 ? Number(process.argv[i + 1]) : undefined;
};
const options = Object.fromEntries(
  Object.entries({ documents: arg('--documents'), steps: arg('--steps'), goldfishK: arg('--k'), goldfishH: arg('--h') }).filter(([, v]) => v !== undefined),
);

const t0 = performance.now();
// Both runs go through the shared training loop (progress lines on stderr; run directories under runs/goldfish).
const r = await runGoldfishExperiment({ ...options, progress: 'lines' });
const s = r.settings;
console.log(`${s.documents} documents, ${s.steps} epochs, Goldfish k=${s.goldfishK} h=${s.goldfishH}, recall of the last ${s.holdout} tokens (greedy)\n`);
console.log('| document | tokens | standard: exact / LCS | goldfish: exact / LCS | held-out targets dropped by Goldfish |');
console.log('|---|---:|---|---|---:|');
r.standard.perDocument.forEach((d, i) => {
  const g = r.goldfish.perDocument[i];
  console.log(`| ${d.id} | ${d.tokens} | ${d.exact ? 'yes' : 'no'} / ${d.lcs} | ${g.exact ? 'yes' : 'no'} / ${g.lcs} | ${g.droppedInHoldout} of ${s.holdout} |`);
});
for (const [name, x] of [['standard', r.standard], [`goldfish k=${s.goldfishK}`, r.goldfish]]) {
  console.log(`\n${name}: ${x.exactMatches}/${s.documents} exact, mean LCS/50 ${x.meanLcsNorm.toFixed(3)}, Rouge-L ${x.meanRougeL.toFixed(3)}, final loss ${x.finalLoss.toFixed(4)}`);
}
console.log(`\n${((performance.now() - t0) / 1000).toFixed(0)} s`);
