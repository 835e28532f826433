/**
 * @apertus/serve — an OpenAI-compatible server for Apertus checkpoints: chat and text
 * completions over HTTP (JSON or SSE) and WebSocket, continuous batching, tool calls and
 * reasoning, Prometheus metrics, a built-in chat page, and the `apertus-serve` CLI. The
 * transport-free engine is also its own entry, `@apertus/serve/engine` (re-exported here).
 * @packageDocumentation
 */
export { createServer, type ServerOptions, type CloseOptions, type ApertusServer, type ServerContext } from './server';
export * from './engine';
export { prepareChat, prepareCompletion, prepareTokenize, prepareDetokenize, type RequestLimits, type PreparedChat, type PreparedCompletion } from './requests';
export { prepareEmbeddings, embeddingsResponse, type PreparedEmbeddings, type EmbeddingsResponse } from './embeddings-api';
export { prepareResponse, streamResponse, collectResponse, type PreparedResponse, type ResponseSink } from './responses-api';
export {
  type ChatCompletion, type ChatCompletionChunk, type Completion, type CompletionChunk, type OpenAIUsage, type OpenAIFinishReason,
} from './responses';
export { WS_PATH } from './ws';
export { ApiError, toApiError, type ApiErrorType, type OpenAIErrorBody } from './api-error';
export { runServeCli, serveCommand, type CliIo, type ServeCliOptions } from './cli';
