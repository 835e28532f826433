// A package README's example: its first ```js block — plain JavaScript, so that it runs as it is
// when pasted into a `.mjs` file — and that code in the other shapes a user runs it in
// (CommonJS, bundle input).

/** The first code block fenced as js; null when the README has none. */
export function readmeExample(markdown: string): string | null {
  const m = /^```js[ \t]*\n([\s\S]*?)^```[ \t]*$/m.exec(markdown);
  return m ? m[1]! : null;
}

/** The leading `import … from '…';` statements and the rest of the code. */
export function splitImports(code: string): { imports: string; body: string } {
  const statement = /^import\s[\s\S]*?\sfrom\s+(['"])[^'"]+\1;?[ \t]*\n/m;
  let rest = code;
  let imports = '';
  for (;;) {
    const lead = /^(?:\s*(?:\/\/[^\n]*)?\n)*/.exec(rest)![0];
    const m = statement.exec(rest.slice(lead.length));
    if (!m || m.index !== 0) break;
    imports += lead + m[0];
    rest = rest.slice(lead.length + m[0].length);
  }
  return { imports, body: rest };
}

/**
 * The example as a CommonJS-compatible module: imports first, the rest inside an async function
 * (CommonJS has no top-level await), which exits non-zero when it rejects.
 */
export function asCommonJsSource(code: string): string {
  const { imports, body } = splitImports(code);
  return `${imports}\nasync function main() {\n${body}\n}\nmain().catch((e) => {\n  console.error(e);\n  process.exit(1);\n});\n`;
}
