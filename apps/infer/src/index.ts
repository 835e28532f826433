/**
 * @apertus/infer — terminal chat (`apertus-chat`) and one-shot generation (`apertus-generate`)
 * for Apertus checkpoint directories. The functions behind the binaries are exported so they can
 * be embedded and tested in-process.
 * @packageDocumentation
 */
export { runChat } from './chat';
export { runGenerate, type GenerateResult } from './generate';
export { type AppIo } from './options';
