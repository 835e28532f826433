// Prometheus metrics in the text exposition format (version 0.0.4), without a client library:
// counters, gauges and cumulative histograms, each with optional labels.

type Labels = Record<string, string>;

function labelText(labels: Labels): string {
  const parts = Object.entries(labels).map(([k, v]) => `${k}="${v.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"')}"`);
  return parts.length > 0 ? `{${parts.join(',')}}` : '';
}

function num(v: number): string {
  if (v === Infinity) return '+Inf';
  if (v === -Infinity) return '-Inf';
  return Number.isNaN(v) ? 'NaN' : String(v);
}

/** A monotonically increasing count, per label set. */
export class Counter {
  private readonly values = new Map<string, { labels: Labels; value: number }>();
  /** `name` should end in `_total`. */
  constructor(readonly name: string, readonly help: string) {}

  /** Add `by` (≥ 0) to the series with these labels. */
  inc(labels: Labels = {}, by = 1): void {
    const key = labelText(labels);
    const s = this.values.get(key);
    if (s) s.value += by;
    else this.values.set(key, { labels, value: by });
  }

  /** Current value of one series (0 when never incremented). */
  get(labels: Labels = {}): number {
    return this.values.get(labelText(labels))?.value ?? 0;
  }

  /** Exposition text. */
  render(): string {
    let out = `# HELP ${this.name} ${this.help}\n# TYPE ${this.name} counter\n`;
    if (this.values.size === 0) out += `${this.name} 0\n`;
    for (const { labels, value } of this.values.values()) out += `${this.name}${labelText(labels)} ${num(value)}\n`;
    return out;
  }
}

/** A value that goes up and down (queue depth, running sequences). */
export class Gauge {
  private value = 0;
  constructor(readonly name: string, readonly help: string) {}

  /** Set the value. */
  set(v: number): void {
    this.value = v;
  }

  /** Current value. */
  get(): number {
    return this.value;
  }

  /** Exposition text. */
  render(): string {
    return `# HELP ${this.name} ${this.help}\n# TYPE ${this.name} gauge\n${this.name} ${num(this.value)}\n`;
  }
}

/** A cumulative histogram with fixed upper bounds (`le`), plus `_sum` and `_count`. */
export class Histogram {
  private readonly counts: number[];
  private sum = 0;
  private count = 0;
  readonly buckets: readonly number[];

  /** `buckets`: increasing upper bounds; `+Inf` is added. */
  constructor(readonly name: string, readonly help: string, buckets: readonly number[]) {
    this.buckets = [...buckets].sort((a, b) => a - b);
    this.counts = new Array<number>(this.buckets.length).fill(0);
  }

  /** Record one observation. */
  observe(v: number): void {
    this.sum += v;
    this.count++;
    for (let i = 0; i < this.buckets.length; i++) if (v <= this.buckets[i]!) this.counts[i]!++;
  }

  /** Number of observations. */
  get observations(): number {
    return this.count;
  }

  /** Exposition text. */
  render(): string {
    let out = `# HELP ${this.name} ${this.help}\n# TYPE ${this.name} histogram\n`;
    this.buckets.forEach((b, i) => {
      out += `${this.name}_bucket{le="${num(b)}"} ${this.counts[i]}\n`;
    });
    out += `${this.name}_bucket{le="+Inf"} ${this.count}\n${this.name}_sum ${num(this.sum)}\n${this.name}_count ${this.count}\n`;
    return out;
  }
}

const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 30, 60];

/** Every metric the server exports at `GET /metrics` (names prefixed `apertus_`). */
export class ServerMetrics {
  /** HTTP and WebSocket requests by route and status. */
  readonly requests = new Counter('apertus_requests_total', 'Requests by route and response status.');
  /** Prompt tokens processed (prefill). */
  readonly promptTokens = new Counter('apertus_prompt_tokens_total', 'Prompt tokens prefilled.');
  /** Tokens sampled (stop tokens included). */
  readonly generationTokens = new Counter('apertus_generation_tokens_total', 'Tokens generated.');
  /** Finished sequences by finish reason (stop, length, tool_calls, cancelled, error). */
  readonly finished = new Counter('apertus_sequences_finished_total', 'Finished sequences by finish reason.');
  /** Requests refused because the queue was full. */
  readonly rejected = new Counter('apertus_requests_rejected_total', 'Requests answered 429 because the queue was full.');
  /** Seconds from submission to the first generated token. */
  readonly timeToFirstToken = new Histogram('apertus_time_to_first_token_seconds', 'Time from submission to the first token.', LATENCY_BUCKETS);
  /** Seconds between consecutive tokens of a sequence. */
  readonly interTokenLatency = new Histogram('apertus_inter_token_latency_seconds', 'Time between consecutive tokens of a sequence.', LATENCY_BUCKETS);
  /** Seconds from submission to the end of a request. */
  readonly requestLatency = new Histogram('apertus_request_duration_seconds', 'Time from submission to the last token of a request.', LATENCY_BUCKETS);
  /** Seconds a request waited in the queue. */
  readonly queueTime = new Histogram('apertus_queue_time_seconds', 'Time a request waited before its prefill started.', LATENCY_BUCKETS);
  /** Requests waiting for a batch slot. */
  readonly queueDepth = new Gauge('apertus_queue_depth', 'Requests waiting for a batch slot.');
  /** Sequences in the running batch. */
  readonly running = new Gauge('apertus_sequences_running', 'Sequences in the running batch.');
  /** Bytes held by the KV caches of running sequences. */
  readonly kvCacheBytes = new Gauge('apertus_kv_cache_bytes', 'Bytes held by the KV caches of running sequences.');
  /** KV blocks allocated (running sequences and the prefix cache; a shared block counts once). */
  readonly kvBlocks = new Gauge('apertus_kv_blocks', 'KV cache blocks allocated, shared blocks counted once.');
  /** Prefix-cache lookups by result (hit, miss). */
  readonly prefixCacheLookups = new Counter('apertus_prefix_cache_lookups_total', 'Prefix-cache lookups of admitted prompts, by result.');
  /** Prompt tokens whose KV came from the prefix cache instead of prefill. */
  readonly prefixCacheReusedTokens = new Counter('apertus_prefix_cache_reused_tokens_total', 'Prompt tokens reused from the prefix cache (not prefilled).');
  /** Bytes of KV blocks held by the prefix cache. */
  readonly prefixCacheBytes = new Gauge('apertus_prefix_cache_bytes', 'Bytes of KV blocks held by the prefix cache.');
  /** Batched decode/prefill steps run. */
  readonly steps = new Counter('apertus_steps_total', 'Batched model steps run.');
  /** 1 once the model is loaded. */
  readonly modelLoaded = new Gauge('apertus_model_loaded', '1 once the model is loaded and requests are served.');
  /** Fraction of the weights' bytes read so far. */
  readonly loadProgress = new Gauge('apertus_model_load_progress', 'Fraction of the weights read while the model loads (1 once loaded).');

  /** The whole exposition text. */
  render(): string {
    return [
      this.requests, this.rejected, this.promptTokens, this.generationTokens, this.finished, this.steps,
      this.timeToFirstToken, this.interTokenLatency, this.requestLatency, this.queueTime,
      this.queueDepth, this.running, this.kvCacheBytes, this.kvBlocks,
      this.prefixCacheLookups, this.prefixCacheReusedTokens, this.prefixCacheBytes, this.modelLoaded, this.loadProgress,
    ].map((m) => m.render()).join('');
  }
}
