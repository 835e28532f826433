/**
 * @apertus/serve — an OpenAI-compatible server for Apertus checkpoints: chat and text
 * completions over HTTP (JSON or SSE) and WebSocket, continuous batching, tool calls and
 * reasoning, Prometheus metrics, a built-in chat page, and the `apertus-serve` CLI.
 * @packageDocumentation
 */
export { createServer, type ServerOptions, type CloseOptions, type ApertusServer, type ServerContext } from './server';
export { loadServedModel, parseGenerationConfig, type ServedModel, type LoadServedModelOptions } from './load';
export { ChatPrompt, type ChatPromptOptions } from './chat-prompt';
export {
  Scheduler, defaultStopIds,
  type SchedulerOptions, type GenerationRequest, type GenerationEvent, type GenerationHandle, type FinishReason, type Usage,
} from './scheduler';
export { OutputParser, parseToolCalls, type OutputParserOptions, type ParserEvent, type Channel, type ToolCall } from './output-parser';
export { StopMatcher } from './stop-strings';
export { prepareChat, prepareCompletion, prepareTokenize, prepareDetokenize, type RequestLimits, type PreparedChat, type PreparedCompletion } from './requests';
export {
  type ChatCompletion, type ChatCompletionChunk, type Completion, type CompletionChunk, type OpenAIUsage, type OpenAIFinishReason,
} from './responses';
export { ServerMetrics, Counter, Gauge, Histogram } from './metrics';
export { WS_PATH } from './ws';
export { ServeError, ApiError, ModelLoadError, PromptError, CliError, toApiError, type ApiErrorType, type OpenAIErrorBody } from './errors';
export { runServeCli, type CliIo, type ServeCliOptions } from './cli';
