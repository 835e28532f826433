/**
 * @apertus/infer — terminal chat (`apertus-chat`) and one-shot generation (`apertus-generate`)
 * for Apertus checkpoint directories. The functions behind the binaries are exported so they can
 * be embedded and tested in-process.
 * @packageDocumentation
 */
export { runChat } from './chat';
export { runGenerate, type GenerateResult } from './generate';
export { ChatSession, DEFAULT_CHAT_SETTINGS, type ChatSettings, type ChatReply } from './session';
export { type AppIo } from './options';
