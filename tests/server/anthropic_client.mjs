// Drives a running `strix serve` with the official `@anthropic-ai/sdk` npm
// package (pinned in package.json) and plain fetch, printing one JSON object
// of observations for the C++ tests to check.
//   node anthropic_client.mjs MODE BASE_URL API_KEY [N] [STOP]
import Anthropic from '@anthropic-ai/sdk';
import Ajv from 'ajv';

const [mode, base, apiKey, nArg, stopArg] = process.argv.slice(2);
const n = Number(nArg ?? 16);
// The SDK sends the key as x-api-key.
const client = new Anthropic({baseURL: base, apiKey, maxRetries: 0, timeout: 60000});
const messages = [{role: 'user', content: 'Hi'}];

async function apiError(fn) {
  try {
    await fn();
    return {status: 0};
  } catch (e) {
    return {status: e.status ?? -1, body: e.error ?? null, message: e.message};
  }
}

async function raw(path, body, headers = {}) {
  const r = await fetch(base + path, {method: 'POST', body,
    headers: {'x-api-key': apiKey, 'content-type': 'application/json', ...headers}});
  const text = await r.text();
  let parsed = null;
  try { parsed = JSON.parse(text); } catch { parsed = text; }
  return {status: r.status, body: parsed};
}

const modes = {
  async messages() {
    const r = await client.messages.create({model: 'm', max_tokens: n, temperature: 0, messages});
    // the same as text blocks, and with a system prompt given as blocks
    const blocks = await client.messages.create({model: 'm', max_tokens: n, temperature: 0,
      messages: [{role: 'user', content: [{type: 'text', text: 'Hi'}]}]});
    const events = [];
    const stream = client.messages.stream({model: 'm', max_tokens: n, temperature: 0, messages});
    let text = '';
    for await (const e of stream) {
      events.push(e.type === 'content_block_delta' ? `${e.type}:${e.delta.type}` : e.type);
      if (e.type === 'content_block_delta' && e.delta.type === 'text_delta') text += e.delta.text;
    }
    const final = await stream.finalMessage();
    const stopped = await client.messages.create(
        {model: 'm', max_tokens: n, temperature: 0, messages, stop_sequences: [stopArg]});
    // several stop sequences: the one that matched is reported (here the second)
    const stopped2 = await client.messages.create(
        {model: 'm', max_tokens: n, temperature: 0, messages, stop_sequences: ['\u0001never', stopArg]});
    const count = await client.messages.countTokens({model: 'm', messages});
    return {text: r.content[0]?.text, type: r.type, role: r.role, stop_reason: r.stop_reason, usage: r.usage,
            blocks_text: blocks.content[0]?.text, events, stream_text: text, final_text: final.content[0]?.text,
            final_usage: final.usage, final_stop: final.stop_reason,
            stopped: {text: stopped.content[0]?.text, stop_reason: stopped.stop_reason,
                      stop_sequence: stopped.stop_sequence},
            stopped2: {text: stopped2.content[0]?.text, stop_sequence: stopped2.stop_sequence},
            count: count.input_tokens};
  },
  async errors() {
    const out = {};
    out.no_max_tokens = await apiError(() => client.messages.create({model: 'm', messages}));
    out.unknown = await apiError(() => client.messages.create({model: 'm', max_tokens: 4, messages, frobnicate: 1}));
    out.bad_type = await apiError(() => client.messages.create({model: 'm', max_tokens: 4, messages, temperature: 'x'}));
    out.image = await apiError(() => client.messages.create({model: 'm', max_tokens: 4, messages: [{role: 'user',
      content: [{type: 'image', source: {type: 'base64', media_type: 'image/png', data: 'AAAA'}}]}]}));
    out.pdf = await apiError(() => client.messages.create({model: 'm', max_tokens: 4, messages: [{role: 'user',
      content: [{type: 'document', source: {type: 'base64', media_type: 'application/pdf', data: 'AAAA'}},
                {type: 'text', text: 'Summarize'}]}]}));
    out.doc_url = await apiError(() => client.messages.create({model: 'm', max_tokens: 4, messages: [{role: 'user',
      content: [{type: 'document', source: {type: 'url', url: 'https://example.com/a.pdf'}}]}]}));
    out.doc_citations = await apiError(() => client.messages.create({model: 'm', max_tokens: 4, messages: [{role: 'user',
      content: [{type: 'document', source: {type: 'text', media_type: 'text/plain', data: 'x'},
                 citations: {enabled: true}}]}]}));
    out.image_in_result = await apiError(() => client.messages.create({model: 'm', max_tokens: 4, messages: [
      {role: 'user', content: 'Hi'},
      {role: 'assistant', content: [{type: 'tool_use', id: 't1', name: 'f', input: {}}]},
      {role: 'user', content: [{type: 'tool_result', tool_use_id: 't1',
        content: [{type: 'image', source: {type: 'base64', media_type: 'image/png', data: 'AAAA'}}]}]}]}));
    const wrong = new Anthropic({baseURL: base, apiKey: 'wrong', maxRetries: 0});
    out.wrong_key = await apiError(() => wrong.messages.create({model: 'm', max_tokens: 4, messages}));
    out.malformed = await raw('/v1/messages', '{"messages": [');
    out.oversized = await raw('/v1/messages', JSON.stringify({model: 'm', max_tokens: 4,
      messages: [{role: 'user', content: 'x'.repeat(300000)}]}));
    // Bearer works as well as x-api-key
    out.bearer = await fetch(base + '/v1/messages/count_tokens', {method: 'POST',
      headers: {Authorization: `Bearer ${apiKey}`}, body: JSON.stringify({model: 'm', messages})}).then((r) => r.status);
    return out;
  },
  // Plain-text documents are text the model reads (docs/SERVER.md: title, context and text as paragraphs).
  async documents() {
    const doc = {model: 'm', max_tokens: n, temperature: 0, messages: [{role: 'user', content: [
      {type: 'document', source: {type: 'text', media_type: 'text/plain', data: 'Once upon a time'}, title: 'Story'},
      {type: 'text', text: 'Hi'}]}]};
    const r = await client.messages.create(doc);
    const count = await client.messages.countTokens({model: 'm', messages: doc.messages});
    const content_doc = await client.messages.countTokens({model: 'm', messages: [{role: 'user', content: [
      {type: 'text', text: 'Read:'},
      {type: 'document', source: {type: 'content', content: [{type: 'text', text: 'A'}, {type: 'text', text: 'B'}]},
       context: 'Notes', cache_control: {type: 'ephemeral'}}]}]});
    return {text: r.content[0]?.text ?? null, input_tokens: r.usage.input_tokens, count: count.input_tokens,
            content_doc: content_doc.input_tokens};
  },
  // Tools on a template without a format of its own (ChatML): llama.cpp's generic JSON format.
  async generic_tools() {
    const input_schema = {type: 'object', properties: {city: {type: 'string', enum: ['Paris', 'Oslo']}},
                          required: ['city'], additionalProperties: false};
    const r = await client.messages.create({model: 'm', max_tokens: 300, temperature: 0, messages,
      tools: [{name: 'get_weather', input_schema}],
      tool_choice: {type: 'tool', name: 'get_weather', disable_parallel_tool_use: true}});
    const use = r.content.find((b) => b.type === 'tool_use');
    return {stop_reason: r.stop_reason, types: r.content.map((b) => b.type), name: use?.name ?? null,
            input: use?.input ?? null, valid: use ? new Ajv().validate(input_schema, use.input) : false};
  },
  async tools() {
    const input_schema = {type: 'object', properties: {city: {type: 'string', enum: ['Paris', 'Oslo']}},
                          required: ['city']};
    const req = {model: 'm', max_tokens: 400, temperature: 0, chat_template_kwargs: {enable_thinking: false},
                 messages: [{role: 'user', content: 'Weather in Paris?'}],
                 tools: [{name: 'get_weather', description: 'Weather', input_schema}],
                 tool_choice: {type: 'tool', name: 'get_weather', disable_parallel_tool_use: true}};
    const r = await client.messages.create(req);
    const use = r.content.find((b) => b.type === 'tool_use');
    const ajv = new Ajv();
    const stream = client.messages.stream(req);
    const events = [];
    let json = '', json_fragments = 0, json_events = 0;
    // the SDK's accumulator re-parses the partial JSON at each input_json_delta
    stream.on('inputJson', () => json_events++);
    for await (const e of stream) {
      events.push(e.type === 'content_block_delta' ? `${e.type}:${e.delta.type}` :
                  e.type === 'content_block_start' ? `${e.type}:${e.content_block.type}` : e.type);
      if (e.type === 'content_block_delta' && e.delta.type === 'input_json_delta') {
        json += e.delta.partial_json;
        json_fragments++;
      }
    }
    const final = await stream.finalMessage();
    // the call and its result given back: tool_use / tool_result blocks through the template
    const next = await client.messages.create({model: 'm', max_tokens: 4, temperature: 0,
      chat_template_kwargs: {enable_thinking: false}, tools: req.tools,
      messages: [{role: 'user', content: 'Weather in Paris?'},
                 {role: 'assistant', content: [{type: 'tool_use', id: 'toolu_1', name: 'get_weather',
                                                input: {city: 'Paris'}}]},
                 {role: 'user', content: [{type: 'tool_result', tool_use_id: 'toolu_1', content: 'sunny'}]}]});
    return {stop_reason: r.stop_reason, name: use?.name, input: use?.input, valid: use ? ajv.validate(input_schema, use.input) : false,
            events, stream_json: json, json_fragments, json_events, final_stop: final.stop_reason,
            final_input: final.content.find((b) => b.type === 'tool_use')?.input ?? null, next_stop: next.stop_reason};
  },
};

try {
  const result = await modes[mode]();
  process.stdout.write(JSON.stringify(result) + '\n');
} catch (e) {
  process.stdout.write(JSON.stringify({fatal: String(e?.stack ?? e)}) + '\n');
  process.exit(2);
}
