// How deep a JSON value nests, found without recursion. `JSON.parse` itself is iterative and takes
// any depth, but everything after it that walks a value recursively (schema compilation,
// `JSON.stringify`, template rendering) would overflow the stack on a body of a million `[`. So
// request bodies (HTTP and WebSocket) are refused beyond MAX_REQUEST_DEPTH levels, and JSON
// schemas beyond MAX_SCHEMA_DEPTH, before anything else reads them.

/** Deepest nesting of arrays and objects a request body may have (a scalar is depth 0, `[]` depth 1). */
export const MAX_REQUEST_DEPTH = 128;

/** Deepest nesting of a JSON schema given for constrained decoding (`response_format`, tool parameters). */
export const MAX_SCHEMA_DEPTH = 64;

/**
 * The path (`messages[0].content`, `a.b[3]`, relative to `root`) of the first container nested
 * deeper than `max`, or null when `value` stays within it.
 */
export function tooDeep(value: unknown, max: number, root = ''): string | null {
  const stack: { v: unknown; depth: number; path: string }[] = [{ v: value, depth: 0, path: root }];
  while (stack.length > 0) {
    const { v, depth, path } = stack.pop()!;
    if (v === null || typeof v !== 'object') continue;
    if (depth + 1 > max) return path === '' ? '(body)' : path;
    if (Array.isArray(v)) for (let i = v.length - 1; i >= 0; i--) stack.push({ v: v[i], depth: depth + 1, path: `${path}[${i}]` });
    else for (const [k, x] of Object.entries(v)) stack.push({ v: x, depth: depth + 1, path: path === '' ? k : `${path}.${k}` });
  }
  return null;
}
