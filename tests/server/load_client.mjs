// One round of the load test (tests/server/load_test.cpp): N concurrent
// streaming /v1/completions requests against a running `strix serve`, read
// with plain fetch and parsed as server-sent events; then /metrics once the
// server is idle again. Prints one JSON object:
//   {"completed": <streams that ended with a finish_reason and [DONE]>,
//    "errors": [...], "tokens": <chunks with text>, "metrics": "<text>"}
//   node load_client.mjs BASE_URL N MAX_TOKENS ROUND
const [base, nArg, maxArg, roundArg] = process.argv.slice(2);
const n = Number(nArg), maxTokens = Number(maxArg), round = Number(roundArg);

async function stream(i) {
  // a shared opening (the prefix cache) and a distinct tail per request
  const prompt = `Once upon a time, there was a little girl named Lily. Story ${round * 1000 + i}: she`;
  const r = await fetch(`${base}/v1/completions`, {
    method: 'POST',
    headers: {'Content-Type': 'application/json'},
    body: JSON.stringify({model: 'm', prompt, max_tokens: maxTokens, temperature: 0, stream: true}),
  });
  if (r.status !== 200) throw new Error(`request ${i}: HTTP ${r.status}: ${await r.text()}`);
  const decoder = new TextDecoder();
  let buf = '', finish = null, done = false, chunks = 0;
  for await (const part of r.body) {
    buf += decoder.decode(part, {stream: true});
    let at;
    while ((at = buf.indexOf('\n\n')) >= 0) {
      const event = buf.slice(0, at);
      buf = buf.slice(at + 2);
      for (const line of event.split('\n')) {
        if (!line.startsWith('data: ')) continue;
        const data = line.slice(6);
        if (data === '[DONE]') {
          done = true;
          continue;
        }
        const j = JSON.parse(data);
        if (j.error) throw new Error(`request ${i}: ${JSON.stringify(j.error)}`);
        for (const c of j.choices ?? []) {
          if (c.text) chunks++;
          if (c.finish_reason) finish = c.finish_reason;
        }
      }
    }
  }
  if (!done || !finish) throw new Error(`request ${i}: stream ended without ${done ? 'a finish_reason' : '[DONE]'}`);
  return chunks;
}

async function metricsWhenIdle() {
  let text = '';
  for (let i = 0; i < 500; i++) {
    const r = await fetch(`${base}/metrics`);
    text = await r.text();
    if (r.status !== 200) return `HTTP ${r.status}: ${text}`;
    if (/^llamacpp:requests_processing 0$/m.test(text) && /^llamacpp:requests_deferred 0$/m.test(text)) break;
    await new Promise((res) => setTimeout(res, 20));
  }
  return text;
}

const results = await Promise.allSettled(Array.from({length: n}, (_, i) => stream(i)));
const errors = results.filter((r) => r.status === 'rejected').map((r) => String(r.reason?.message ?? r.reason));
const tokens = results.filter((r) => r.status === 'fulfilled').reduce((a, r) => a + r.value, 0);
console.log(JSON.stringify({completed: n - errors.length, errors, tokens, metrics: await metricsWhenIdle()}));
