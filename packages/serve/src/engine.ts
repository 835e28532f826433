/**
 * `@apertus/serve/engine` — generation without any transport: the checkpoint loader, chat prompts
 * (the checkpoint's template, message text as plain text), the continuous-batching scheduler with
 * sampling, stop tokens and strings, constrained decoding and log-probabilities, and the parser
 * that turns tokens into text, reasoning and tool calls; a chat session with history over the
 * scheduler. Its errors carry codes, not HTTP
 * statuses. Nothing here imports `node:http` or `ws`; the server (the package's main entry) is one
 * transport over it, `apertus-chat` / `apertus-generate` are others.
 * @packageDocumentation
 */
export { loadServedModel, type ServedModel, type LoadServedModelOptions } from './load';
export { parseGenerationConfig } from '@apertus/model';
export { ChatPrompt, type ChatPromptOptions } from '@apertus/pretrained';
export {
  Scheduler, defaultStopIds,
  type SchedulerOptions, type GenerationRequest, type GenerationEvent, type GenerationHandle, type FinishReason, type Usage, type TokenLogprob,
} from './scheduler';
export { ChatSession, DEFAULT_CHAT_SETTINGS, type ChatSettings, type ChatReply } from './chat-session';
export { OutputParser, parseToolCalls, type OutputParserOptions, type ParserEvent, type Channel, type ToolCall } from './output-parser';
export { StopMatcher } from './stop-strings';
export { compileSchema, SchemaError, ANY_OBJECT, type SchemaNode } from './json-grammar';
export { TokenConstraint, type ConstraintSpec } from './token-constraint';
export { ServerMetrics, Counter, Gauge, Histogram } from './metrics';
export { ServeError, EngineError, ModelLoadError, PromptError, CliError, type EngineErrorCode } from './errors';
export { parseCommand } from './cli-args';
