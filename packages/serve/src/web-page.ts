// The built-in chat page served at `/`: one HTML document with inline CSS and JS (allowed by a
// per-response CSP nonce), no external resources. It streams from /v1/chat/completions with
// fetch + SSE parsing, keeps the conversation in memory, and shows reasoning separately.

const STYLE = `
*{box-sizing:border-box}body{margin:0;font:15px/1.45 system-ui,sans-serif;background:#f6f6f4;color:#1c1c1c;display:flex;flex-direction:column;height:100vh}
header{padding:.6rem 1rem;background:#d52b1e;color:#fff;display:flex;gap:1rem;align-items:center;flex-wrap:wrap}
header h1{font-size:1.05rem;margin:0}header label{font-size:.85rem;display:flex;gap:.3rem;align-items:center}
header input[type=number]{width:5rem}header input[type=password],header input[type=text]{width:12rem}
#log{flex:1;overflow-y:auto;padding:1rem;display:flex;flex-direction:column;gap:.7rem}
.msg{max-width:48rem;padding:.6rem .8rem;border-radius:.5rem;white-space:pre-wrap;word-wrap:break-word}
.user{align-self:flex-end;background:#fff;border:1px solid #ddd}.assistant{align-self:flex-start;background:#fff3f2;border:1px solid #f0c8c4}
.reasoning{color:#666;font-size:.85rem;margin-bottom:.4rem}.reasoning pre{white-space:pre-wrap;margin:.3rem 0 0;font:inherit}
.tools{font-family:monospace;font-size:.85rem;color:#444}.error{color:#a00}
form{display:flex;gap:.5rem;padding:.7rem 1rem;background:#fff;border-top:1px solid #ddd}
textarea{flex:1;resize:none;height:3.2rem;font:inherit;padding:.4rem}button{padding:0 1rem}
#status{font-size:.8rem;color:#fff;opacity:.85}
`;

const SCRIPT = `
const $ = (s) => document.querySelector(s);
const log = $('#log'), input = $('#input'), send = $('#send'), stop = $('#stop'), statusEl = $('#status');
const keyEl = $('#api-key');
keyEl.value = localStorage.getItem('apertus-api-key') || '';
keyEl.addEventListener('change', () => { localStorage.setItem('apertus-api-key', keyEl.value); loadModel(); });
let model = null, history = [], controller = null;
function headers() {
  const h = { 'content-type': 'application/json' };
  if (keyEl.value) h.authorization = 'Bearer ' + keyEl.value;
  return h;
}
function setStatus(state, text) { statusEl.dataset.state = state; statusEl.textContent = text; }
async function loadModel() {
  try {
    const r = await fetch('/v1/models', { headers: headers() });
    const j = await r.json();
    if (!r.ok) throw new Error(j.error ? j.error.message : r.statusText);
    model = j.data[0].id;
    $('#model').textContent = model;
    setStatus('idle', 'ready');
  } catch (e) { setStatus('error', String(e.message || e)); }
}
function bubble(role) {
  const d = document.createElement('div');
  d.className = 'msg ' + role;
  log.appendChild(d);
  return d;
}
function assistantBubble() {
  const d = bubble('assistant');
  const det = document.createElement('details'); det.className = 'reasoning'; det.hidden = true;
  const sum = document.createElement('summary'); sum.textContent = 'Reasoning';
  const pre = document.createElement('pre'); det.append(sum, pre);
  const content = document.createElement('div'); content.className = 'content';
  const tools = document.createElement('div'); tools.className = 'tools';
  d.append(det, content, tools);
  return { d, det, pre, content, tools };
}
async function chat(text) {
  history.push({ role: 'user', content: text });
  bubble('user').textContent = text;
  const b = assistantBubble();
  const messages = [];
  const sys = $('#system').value.trim();
  if (sys) messages.push({ role: 'system', content: sys });
  messages.push(...history);
  const body = {
    model, messages, stream: true, stream_options: { include_usage: true },
    temperature: Number($('#temperature').value), enable_thinking: $('#thinking').checked,
  };
  if ($('#max-tokens').value) body.max_tokens = Number($('#max-tokens').value);
  controller = new AbortController();
  send.disabled = true; stop.disabled = false; setStatus('streaming', 'generating…');
  let answer = '', failed = false;
  try {
    const r = await fetch('/v1/chat/completions', { method: 'POST', headers: headers(), body: JSON.stringify(body), signal: controller.signal });
    if (!r.ok) { const j = await r.json(); throw new Error(j.error ? j.error.message : r.statusText); }
    const reader = r.body.getReader(), dec = new TextDecoder();
    let buf = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buf += dec.decode(value, { stream: true });
      let i;
      while ((i = buf.indexOf('\\n\\n')) >= 0) {
        const event = buf.slice(0, i); buf = buf.slice(i + 2);
        for (const line of event.split('\\n')) {
          if (!line.startsWith('data: ')) continue;
          const data = line.slice(6);
          if (data === '[DONE]') continue;
          const j = JSON.parse(data);
          if (j.error) throw new Error(j.error.message);
          if (j.usage) $('#usage').textContent = j.usage.prompt_tokens + ' + ' + j.usage.completion_tokens + ' tokens';
          for (const c of j.choices || []) {
            const d = c.delta || {};
            if (d.reasoning_content) { b.det.hidden = false; b.pre.textContent += d.reasoning_content; }
            if (d.content) { answer += d.content; b.content.textContent = answer; }
            if (d.tool_calls) for (const t of d.tool_calls) b.tools.textContent += t.function.name + '(' + t.function.arguments + ')\\n';
            if (c.finish_reason) b.d.dataset.finish = c.finish_reason;
          }
          log.scrollTop = log.scrollHeight;
        }
      }
    }
  } catch (e) {
    failed = true;
    if (e.name !== 'AbortError') { const p = document.createElement('div'); p.className = 'error'; p.textContent = String(e.message || e); b.d.appendChild(p); }
  }
  history.push({ role: 'assistant', content: answer });
  b.d.dataset.done = 'true';
  send.disabled = false; stop.disabled = true; controller = null;
  setStatus(failed ? 'error' : 'idle', failed ? 'stopped' : 'ready');
}
$('#form').addEventListener('submit', (e) => {
  e.preventDefault();
  const text = input.value.trim();
  if (!text || controller) return;
  input.value = '';
  chat(text);
});
input.addEventListener('keydown', (e) => { if (e.key === 'Enter' && !e.shiftKey) { e.preventDefault(); $('#form').requestSubmit(); } });
stop.addEventListener('click', () => controller && controller.abort());
$('#reset').addEventListener('click', () => { history = []; log.textContent = ''; });
loadModel();
`;

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** The chat page, titled with the served model's name once known; `nonce` must match the response's Content-Security-Policy. */
export function chatPage(nonce: string, model: string | null = null): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>${model ? `${escapeHtml(model)} · ` : ''}Apertus chat</title><style nonce="${nonce}">${STYLE}</style></head>
<body>
<header><h1>Apertus · <span id="model">…</span></h1>
<label>System <input id="system" type="text" placeholder="default Apertus prompt"></label>
<label>Temperature <input id="temperature" type="number" min="0" max="2" step="0.1" value="0.8"></label>
<label>Max tokens <input id="max-tokens" type="number" min="1" placeholder="auto"></label>
<label><input id="thinking" type="checkbox"> Thinking</label>
<label>API key <input id="api-key" type="password" autocomplete="off"></label>
<button id="reset" type="button">New chat</button>
<span id="status" data-state="loading">loading…</span> <span id="usage"></span></header>
<main id="log" aria-live="polite"></main>
<form id="form"><textarea id="input" placeholder="Message Apertus (Enter to send, Shift+Enter for a new line)"></textarea>
<button id="send" type="submit">Send</button><button id="stop" type="button" disabled>Stop</button></form>
<script nonce="${nonce}">${SCRIPT}</script>
</body></html>`;
}
