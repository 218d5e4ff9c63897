// Drives a running `strix serve` with the official `openai` npm package (pinned
// in package.json) and plain fetch, printing one JSON object of observations
// for tests/server/server_test.cpp to check.
//   node openai_client.mjs MODE BASE_URL API_KEY [N]
import OpenAI from 'openai';

const [mode, base, apiKey, nArg] = process.argv.slice(2);
const n = Number(nArg ?? 16);
const client = new OpenAI({baseURL: `${base}/v1`, apiKey, maxRetries: 0, timeout: 60000});
const messages = [{role: 'user', content: 'Hi'}];

async function streamChat(extra = {}) {
  const stream = await client.chat.completions.create(
      {model: 'm', messages, temperature: 0, max_tokens: n, stream: true, stream_options: {include_usage: true},
       ...extra});
  let content = '', finish = null, usage = null, chunks = 0, role = null;
  for await (const chunk of stream) {
    chunks++;
    if (chunk.usage) usage = chunk.usage;
    for (const c of chunk.choices) {
      if (c.delta?.role) role = c.delta.role;
      if (c.delta?.content) content += c.delta.content;
      if (c.finish_reason) finish = c.finish_reason;
    }
  }
  return {content, finish, usage, chunks, role};
}

async function apiError(fn) {
  try {
    await fn();
    return {status: 0};
  } catch (e) {
    return {status: e.status ?? -1, message: e.error?.message ?? e.message, param: e.error?.param ?? null,
            type: e.error?.type ?? null, code: e.error?.code ?? null};
  }
}

async function raw(path, init = {}) {
  const r = await fetch(base + path, {...init, headers: {Authorization: `Bearer ${apiKey}`, ...(init.headers ?? {})}});
  const text = await r.text();
  let body = null;
  try { body = JSON.parse(text); } catch { body = text; }
  return {status: r.status, body, cors: r.headers.get('access-control-allow-origin'),
          allow_methods: r.headers.get('access-control-allow-methods')};
}

const modes = {
  async chat() {
    const r = await client.chat.completions.create({model: 'm', messages, temperature: 0, max_tokens: n});
    return {content: r.choices[0].message.content, role: r.choices[0].message.role,
            finish: r.choices[0].finish_reason, usage: r.usage, object: r.object};
  },
  async chat_parts() {
    const r = await client.chat.completions.create(
        {model: 'm', messages: [{role: 'user', content: [{type: 'text', text: 'H'}, {type: 'text', text: 'i'}]}],
         temperature: 0, max_completion_tokens: n});
    return {content: r.choices[0].message.content};
  },
  async chat_stream() { return streamChat(); },
  async completions() {
    const r = await client.completions.create({model: 'm', prompt: 'Once upon a time', temperature: 0, max_tokens: n});
    const s = await client.completions.create(
        {model: 'm', prompt: 'Once upon a time', temperature: 0, max_tokens: n, stream: true});
    let streamed = '';
    for await (const c of s) streamed += c.choices[0]?.text ?? '';
    const stopped = await client.completions.create(
        {model: 'm', prompt: 'Once upon a time', temperature: 0, max_tokens: n, stop: ['girl']});
    return {text: r.choices[0].text, finish: r.choices[0].finish_reason, usage: r.usage, streamed,
            stopped: stopped.choices[0].text, stopped_finish: stopped.choices[0].finish_reason};
  },
  async native() {
    const r = await raw('/completion', {method: 'POST',
      body: JSON.stringify({prompt: 'Once upon a time', n_predict: n, temperature: 0})});
    const tok = await raw('/tokenize', {method: 'POST', body: JSON.stringify({content: 'Once upon a time'})});
    const detok = await raw('/detokenize', {method: 'POST', body: JSON.stringify({tokens: tok.body.tokens})});
    const tmpl = await raw('/apply-template', {method: 'POST', body: JSON.stringify({messages})});
    const models = await client.models.list();
    return {content: r.body.content, stop_type: r.body.stop_type, tokens_predicted: r.body.tokens_predicted,
            tokens: tok.body.tokens, detok: detok.body.content, prompt: tmpl.body.prompt,
            models: models.data.map((m) => m.id)};
  },
  async native_stream() {
    const r = await fetch(base + '/completion', {method: 'POST', headers: {Authorization: `Bearer ${apiKey}`},
      body: JSON.stringify({prompt: 'Once upon a time', n_predict: n, temperature: 0, stream: true})});
    const text = await r.text();
    const events = text.split('\n\n').filter((f) => f.startsWith('data: ')).map((f) => JSON.parse(f.slice(6)));
    return {type: r.headers.get('content-type'), content: events.map((e) => e.content).join(''),
            last: events[events.length - 1], n_events: events.length};
  },
  async fill() {
    // no max_tokens: each runs until the shared KV cache (-c) is full
    const all = await Promise.all(Array.from({length: 3}, () =>
        client.completions.create({model: 'm', prompt: 'Once upon a time', temperature: 0})));
    return {texts: all.map((r) => r.choices[0].text), finishes: all.map((r) => r.choices[0].finish_reason),
            totals: all.map((r) => r.usage.total_tokens)};
  },
  async errors() {
    const out = {};
    out.unknown_field = await apiError(() => client.chat.completions.create(
        {model: 'm', messages, tools: [{type: 'function', function: {name: 'f', parameters: {}}}]}));
    out.made_up_field = await apiError(() => client.chat.completions.create({model: 'm', messages, frobnicate: 1}));
    out.n2 = await apiError(() => client.chat.completions.create({model: 'm', messages, n: 2}));
    out.echo = await apiError(() => client.completions.create({model: 'm', prompt: 'x', echo: true}));
    out.bad_part = await apiError(() => client.chat.completions.create(
        {model: 'm', messages: [{role: 'user', content: [{type: 'image_url', image_url: {url: 'x'}}]}]}));
    out.bad_type = await apiError(() => client.chat.completions.create({model: 'm', messages, temperature: 'hot'}));
    out.long_prompt = await apiError(() => client.completions.create(
        {model: 'm', prompt: 'hello '.repeat(Number(process.env.LONG_WORDS ?? 2000)), max_tokens: 4}));
    const wrong = new OpenAI({baseURL: `${base}/v1`, apiKey: 'wrong-key', maxRetries: 0});
    out.wrong_key = await apiError(() => wrong.chat.completions.create({model: 'm', messages}));
    out.wrong_key_models = await apiError(() => wrong.models.list());
    out.malformed = await raw('/v1/chat/completions', {method: 'POST', body: '{"messages": ['});
    out.not_found = await raw('/v2/nothing');
    out.wrong_method = await raw('/v1/chat/completions');
    out.preflight = await raw('/v1/chat/completions', {method: 'OPTIONS',
      headers: {Origin: 'http://example.com', 'Access-Control-Request-Method': 'POST'}});
    out.oversized = await raw('/v1/completions', {method: 'POST', body: JSON.stringify({prompt: 'x'.repeat(300000)})});
    out.health = await raw('/health', {headers: {Authorization: 'Bearer wrong'}});
    out.native_unknown = await raw('/completion', {method: 'POST', body: JSON.stringify({prompt: 'x', mirostat: 2})});
    out.bad_token = await raw('/detokenize', {method: 'POST', body: JSON.stringify({tokens: [1, 99999]})});
    return out;
  },
  async concurrent() {
    const all = await Promise.all(Array.from({length: 8}, () => streamChat()));
    return {contents: all.map((r) => r.content), finishes: all.map((r) => r.finish)};
  },
  async disconnect() {
    const before = (await raw('/health')).body;
    const stream = await client.chat.completions.create(
        {model: 'm', messages, temperature: 0, max_tokens: 100000, stream: true});
    let chunks = 0;
    for await (const chunk of stream) {
      if (++chunks === 3) break;  // leaving the loop aborts the request (the SDK closes the connection)
    }
    // the engine sees the cancel at its next step: poll for it
    let health = null;
    for (let i = 0; i < 200; i++) {
      health = (await raw('/health')).body;
      if (health.requests_cancelled > before.requests_cancelled && health.slots_processing === 0) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    const after = await modes.chat();
    return {before, health, after};
  },
};

try {
  const result = await modes[mode]();
  process.stdout.write(JSON.stringify(result) + '\n');
} catch (e) {
  process.stdout.write(JSON.stringify({fatal: String(e?.stack ?? e)}) + '\n');
  process.exit(2);
}
