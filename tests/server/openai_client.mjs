// Drives a running `strix serve` with the official `openai` npm package (pinned
// in package.json) and plain fetch, printing one JSON object of observations
// for tests/server/server_test.cpp to check.
//   node openai_client.mjs MODE BASE_URL API_KEY [N]
import OpenAI from 'openai';
import Ajv from 'ajv';

const [mode, base, apiKey, nArg] = process.argv.slice(2);
const kwargs = {chat_template_kwargs: {enable_thinking: false}};  // Qwen 3: no <think> block opened
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
        {model: 'm', messages: [{role: 'user', content: [{type: 'text', text: 'Hi'}]}],
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
    const stopped = await raw('/completion', {method: 'POST',
      body: JSON.stringify({prompt: 'Once upon a time', n_predict: n, temperature: 0, stop: ['\u0001never', 'girl']})});
    const tok = await raw('/tokenize', {method: 'POST', body: JSON.stringify({content: 'Once upon a time'})});
    const detok = await raw('/detokenize', {method: 'POST', body: JSON.stringify({tokens: tok.body.tokens})});
    const tmpl = await raw('/apply-template', {method: 'POST', body: JSON.stringify({messages})});
    const models = await client.models.list();
    return {content: r.body.content, stop_type: r.body.stop_type, tokens_predicted: r.body.tokens_predicted,
            tokens: tok.body.tokens, detok: detok.body.content, prompt: tmpl.body.prompt,
            models: models.data.map((m) => m.id),
            stopped: {content: stopped.body.content, stop_type: stopped.body.stop_type,
                      stopping_word: stopped.body.stopping_word}};
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
    out.made_up_field = await apiError(() => client.chat.completions.create({model: 'm', messages, frobnicate: 1}));
    out.n0 = await apiError(() => client.chat.completions.create({model: 'm', messages, n: 0}));
    out.echo_logprobs = await apiError(() => client.completions.create({model: 'm', prompt: 'x', echo: true, logprobs: 2}));
    out.best_of_stream = await apiError(() => client.completions.create(
        {model: 'm', prompt: 'x', best_of: 2, n: 1, stream: true}));
    out.bad_schema = await apiError(() => client.chat.completions.create({model: 'm', messages,
      response_format: {type: 'json_schema', json_schema: {name: 's', schema: {type: 'object', not: {}}}}}));
    out.bad_grammar = await raw('/completion', {method: 'POST', body: JSON.stringify({prompt: 'x', grammar: 'root ::= ('})});
    out.bad_message_field = await apiError(() => client.chat.completions.create(
        {model: 'm', messages: [{role: 'user', content: 'x', audio: {}}]}));
    out.id_slot = await raw('/completion', {method: 'POST', body: JSON.stringify({prompt: 'x', id_slot: 9})});  // of -np 4
    out.prev_response = await apiError(() => client.responses.create({model: 'm', input: 'Hi', previous_response_id: 'r1'}));
    out.store = await apiError(() => client.responses.create({model: 'm', input: 'Hi', store: true}));
    out.hosted_tool = await apiError(() => client.responses.create(
        {model: 'm', input: 'Hi', tools: [{type: 'web_search_preview'}]}));
    out.props_post = await raw('/props', {method: 'POST', body: '{}'});
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
    out.native_unknown = await raw('/completion', {method: 'POST', body: JSON.stringify({prompt: 'x', input_prefix: 'y'})});
    out.bad_token = await raw('/detokenize', {method: 'POST', body: JSON.stringify({tokens: [1, 99999]})});
    return out;
  },
  // Logprobs at temperature 0 (the C++ side compares them with libllama's log-softmax), echo, n, best_of.
  async logprobs() {
    const c = await client.chat.completions.create(
        {model: 'm', messages, temperature: 0, max_tokens: n, logprobs: true, top_logprobs: 3});
    const s = await streamChat({logprobs: true, top_logprobs: 2});
    const stream = await client.chat.completions.create(
        {model: 'm', messages, temperature: 0, max_tokens: n, stream: true, logprobs: true});
    const streamed = [];
    for await (const chunk of stream) {
      for (const ch of chunk.choices) for (const t of ch.logprobs?.content ?? []) streamed.push(t.logprob);
    }
    const p = await client.completions.create(
        {model: 'm', prompt: 'Once upon a time', temperature: 0, max_tokens: n, logprobs: 2});
    const echo = await client.completions.create(
        {model: 'm', prompt: 'Once upon a time', temperature: 0, max_tokens: n, echo: true});
    const two = await client.chat.completions.create({model: 'm', messages, temperature: 0, max_tokens: n, n: 2});
    const best = await client.completions.create(
        {model: 'm', prompt: 'Once upon a time', temperature: 1.5, seed: 7, max_tokens: 8, n: 1, best_of: 3,
         logprobs: 0});
    const native = await raw('/completion', {method: 'POST',
      body: JSON.stringify({prompt: 'Once upon a time', n_predict: 4, temperature: 0, n_probs: 2})});
    return {
      chat: c.choices[0].logprobs.content.map((t) => ({token: t.token, logprob: t.logprob, bytes: t.bytes,
                                                       top: t.top_logprobs})),
      chat_content: c.choices[0].message.content, streamed, stream_content: s.content,
      completion: {tokens: p.choices[0].logprobs.tokens, logprobs: p.choices[0].logprobs.token_logprobs,
                   top: p.choices[0].logprobs.top_logprobs, offsets: p.choices[0].logprobs.text_offset,
                   text: p.choices[0].text},
      echo: echo.choices[0].text,
      two: two.choices.map((ch) => ({index: ch.index, content: ch.message.content})),
      best: {n: best.choices.length, usage: best.usage, text: best.choices[0].text,
             sum: best.choices[0].logprobs.token_logprobs.reduce((a, b) => a + b, 0)},
      native: native.body.completion_probabilities,
    };
  },
  // response_format json_schema / json_object and llama-server's grammar, checked by ajv here.
  async json_schema() {
    const schema = {type: 'object', properties: {name: {type: 'string', maxLength: 6},
                                                 age: {type: 'integer', minimum: 0, maximum: 99},
                                                 pet: {enum: ['cat', 'dog']}},
                    required: ['name', 'age', 'pet'], additionalProperties: false};
    const r = await client.chat.completions.create({model: 'm', messages, temperature: 0, max_tokens: 300,
      response_format: {type: 'json_schema', json_schema: {name: 'person', schema, strict: true}}});
    const text = r.choices[0].message.content;
    const ajv = new Ajv();
    let value = null, valid = false;
    try { value = JSON.parse(text); valid = ajv.validate(schema, value); } catch { valid = false; }
    // the schema as llama-server's json_schema field, on /v1/completions
    const c = await client.completions.create({model: 'm', prompt: 'Once upon a time', temperature: 0.8, seed: 3,
                                               max_tokens: 300, json_schema: schema});
    let valid2 = false;
    try { valid2 = ajv.validate(schema, JSON.parse(c.choices[0].text)); } catch { valid2 = false; }
    const g = await raw('/completion', {method: 'POST', body: JSON.stringify(
        {prompt: 'Once upon a time', n_predict: 20, temperature: 1, seed: 5, grammar: 'root ::= ("yes" | "no") "!"'})});
    // the same prompt without a schema: not JSON (negative control)
    const free = await client.chat.completions.create({model: 'm', messages, temperature: 0, max_tokens: 30});
    let free_valid = false;
    try { free_valid = ajv.validate(schema, JSON.parse(free.choices[0].message.content)); } catch { free_valid = false; }
    return {text, valid, errors: ajv.errors, finish: r.choices[0].finish_reason, completions_valid: valid2,
            completions_text: c.choices[0].text, grammar: g.body.content, free_valid};
  },
  // A grammar that writes a <think> block: reasoning_content is split off (--reasoning-format auto).
  async reasoning() {
    const grammar = 'root ::= "<think>ab</think>cd"';
    const r = await client.chat.completions.create(
        {model: 'm', messages, temperature: 0, max_tokens: 40, grammar, ...kwargs});
    const s = await client.chat.completions.create(
        {model: 'm', messages, temperature: 0, max_tokens: 40, grammar, stream: true, ...kwargs});
    let content = '', reasoning = '';
    for await (const chunk of s) {
      for (const c of chunk.choices) {
        content += c.delta?.content ?? '';
        reasoning += c.delta?.reasoning_content ?? '';
      }
    }
    const rawc = await raw('/completion', {method: 'POST', body: JSON.stringify({prompt: 'x', n_predict: 40, grammar})});
    return {content: r.choices[0].message.content, reasoning: r.choices[0].message.reasoning_content,
            stream_content: content, stream_reasoning: reasoning, raw: rawc.body.content};
  },
  async responses() {
    const r = await client.responses.create({model: 'm', input: 'Hi', temperature: 0, max_output_tokens: n});
    const items = await client.responses.create({model: 'm', temperature: 0, max_output_tokens: n,
      input: [{type: 'message', role: 'user', content: [{type: 'input_text', text: 'Hi'}]}]});
    const s = await client.responses.create({model: 'm', input: 'Hi', temperature: 0, max_output_tokens: n, stream: true});
    const events = [];
    let text = '', done_text = null, final = null;
    for await (const e of s) {
      events.push(e.type);
      if (e.type === 'response.output_text.delta') text += e.delta;
      if (e.type === 'response.output_text.done') done_text = e.text;
      if (e.type === 'response.completed' || e.type === 'response.incomplete') final = e.response;
    }
    return {text: r.output_text, status: r.status, usage: r.usage, incomplete: r.incomplete_details,
            items_text: items.output_text, events, stream_text: text, done_text, final_status: final?.status,
            final_usage: final?.usage};
  },
  async endpoints() {
    const metrics = await fetch(base + '/metrics', {headers: {Authorization: `Bearer ${apiKey}`}});
    const slots = await raw('/slots');
    const props = await raw('/props');
    return {metrics: await metrics.text(), metrics_type: metrics.headers.get('content-type'), slots: slots.body,
            props: props.body};
  },
  // Tools on a template without a tool-call format of its own (ChatML): llama.cpp's
  // generic JSON format, forced by the grammar from the first token.
  async generic_tools() {
    // properties out of alphabetical order: the prompt and the grammar keep the request's order
    const parameters = {type: 'object', properties: {unit: {type: 'string', enum: ['c', 'f']},
                                                     city: {type: 'string', enum: ['Paris', 'Oslo']}},
                        required: ['unit', 'city'], additionalProperties: false};
    const tools = [{type: 'function', function: {name: 'get_weather', description: 'Weather', parameters}}];
    const req = {model: 'm', messages, temperature: 0, max_tokens: 300, tools, parallel_tool_calls: false,
                 tool_choice: {type: 'function', function: {name: 'get_weather'}}};
    const r = await client.chat.completions.create(req);
    const call = r.choices[0].message.tool_calls?.[0];
    let args_valid = false;
    try { args_valid = new Ajv().validate(parameters, JSON.parse(call.function.arguments)); } catch { args_valid = false; }
    const stream = await client.chat.completions.create({...req, stream: true});
    let sargs = '', sname = null;
    for await (const chunk of stream) {
      for (const tc of chunk.choices[0]?.delta?.tool_calls ?? []) {
        if (tc.function?.name) sname = tc.function.name;
        sargs += tc.function?.arguments ?? '';
      }
    }
    const none = await client.chat.completions.create({...req, tool_choice: 'none', max_tokens: n});
    const tmpl = await raw('/apply-template', {method: 'POST', body: JSON.stringify({messages, tools})});
    return {finish: r.choices[0].finish_reason, content: r.choices[0].message.content, name: call?.function.name ?? null,
            args: call?.function.arguments ?? null, args_valid, stream_name: sname, stream_args: sargs,
            prompt_tokens: r.usage.prompt_tokens, prompt: tmpl.body.prompt,
            none_content: none.choices[0].message.content, none_calls: none.choices[0].message.tool_calls ?? null};
  },
  // A template of a native llama.cpp format Strix does not implement: tools are refused by name.
  async tools_refused() {
    return await apiError(() => client.chat.completions.create(
        {model: 'm', messages, max_tokens: 4, tools: [{type: 'function', function: {name: 'f', parameters: {}}}]}));
  },
  // Tools on a model whose template has a tool-call format (Qwen 3's Hermes <tool_call>).
  async tools() {
    const parameters = {type: 'object', properties: {city: {type: 'string', enum: ['Paris', 'Oslo']},
                                                     days: {type: 'integer', minimum: 1, maximum: 7}},
                        required: ['city', 'days']};
    const tools = [{type: 'function', function: {name: 'get_weather', description: 'Weather', parameters}},
                   {type: 'function', function: {name: 'get_time', parameters: {type: 'object', properties: {}}}}];
    const ajv = new Ajv();
    const base_req = {model: 'm', messages: [{role: 'user', content: 'Weather in Paris?'}], temperature: 0,
                      max_tokens: 400, tools, parallel_tool_calls: false, ...kwargs};
    const forced = await client.chat.completions.create(
        {...base_req, tool_choice: {type: 'function', function: {name: 'get_weather'}}});
    const call = forced.choices[0].message.tool_calls?.[0];
    let args_valid = false;
    try { args_valid = ajv.validate(parameters, JSON.parse(call.function.arguments)); } catch { args_valid = false; }
    const stream = await client.chat.completions.create(
        {...base_req, stream: true, tool_choice: {type: 'function', function: {name: 'get_weather'}}});
    let sname = '', sargs = '', sid = '', sfinish = null, sfirst = null;
    const sfragments = [];
    for await (const chunk of stream) {
      for (const c of chunk.choices) {
        for (const tc of c.delta?.tool_calls ?? []) {
          if (sfirst === null) sfirst = tc;
          if (tc.id) sid = tc.id;
          if (tc.function?.name) sname += tc.function.name;
          if (tc.function?.arguments) {
            sargs += tc.function.arguments;
            sfragments.push(tc.function.arguments);
          }
        }
        if (c.finish_reason) sfinish = c.finish_reason;
      }
    }
    // The SDK's own accumulator (ChatCompletionStream) joins the deltas into a message.
    const helper = client.beta.chat.completions.stream(
        {...base_req, tool_choice: {type: 'function', function: {name: 'get_weather'}}});
    let helper_deltas = 0;
    helper.on('tool_calls.function.arguments.delta', () => helper_deltas++);
    const final_completion = await helper.finalChatCompletion();
    const fcall = final_completion.choices[0].message.tool_calls?.[0];
    const required = await client.chat.completions.create({...base_req, tool_choice: 'required'});
    const none = await client.chat.completions.create({...base_req, tool_choice: 'none', max_tokens: 8});
    // a conversation with an earlier call and its result goes through the template
    const history = [{role: 'user', content: 'Weather in Paris?'},
                     {role: 'assistant', content: null, tool_calls: [{id: 'call_1', type: 'function',
                       function: {name: 'get_weather', arguments: '{"city":"Paris","days":1}'}}]},
                     {role: 'tool', tool_call_id: 'call_1', content: 'sunny, 21 C'}];
    const tmpl = await raw('/apply-template', {method: 'POST', body: JSON.stringify({messages: history, tools})});
    const followup = await client.chat.completions.create(
        {model: 'm', messages: history, tools, temperature: 0, max_tokens: 8, ...kwargs});
    const unknown = await apiError(() => client.chat.completions.create(
        {...base_req, tool_choice: {type: 'function', function: {name: 'nope'}}}));
    // Responses API function tools
    const rtools = [{type: 'function', name: 'get_weather', parameters, strict: true}];
    const resp = await client.responses.create({model: 'm', input: 'Weather in Paris?', tools: rtools, temperature: 0,
      max_output_tokens: 400, tool_choice: {type: 'function', name: 'get_weather'}, parallel_tool_calls: false,
      ...kwargs});
    const fc = resp.output.find((o) => o.type === 'function_call');
    const rs = await client.responses.create({model: 'm', input: 'Weather in Paris?', tools: rtools, temperature: 0,
      max_output_tokens: 400, tool_choice: 'required', parallel_tool_calls: false, stream: true, ...kwargs});
    const revents = [];
    let rargs = '', rdone = null, rfinal = null;
    for await (const e of rs) {
      revents.push(e.type);
      if (e.type === 'response.function_call_arguments.delta') rargs += e.delta;
      if (e.type === 'response.function_call_arguments.done') rdone = e.arguments;
      if (e.type === 'response.completed') rfinal = e.response.output.find((o) => o.type === 'function_call');
    }
    const rhistory = await client.responses.create({model: 'm', temperature: 0, max_output_tokens: 4, tools: rtools,
      input: [{role: 'user', content: 'Weather in Paris?'},
              {type: 'function_call', call_id: 'c1', name: 'get_weather', arguments: '{"city":"Paris","days":1}'},
              {type: 'function_call_output', call_id: 'c1', output: 'sunny'}], ...kwargs});
    return {finish: forced.choices[0].finish_reason, content: forced.choices[0].message.content,
            name: call?.function?.name, args: call?.function?.arguments, id: call?.id, args_valid,
            stream: {id: sid, name: sname, args: sargs, finish: sfinish, fragments: sfragments, first: sfirst},
            sdk_final: {name: fcall?.function?.name, args: fcall?.function?.arguments, id: fcall?.id,
                        n: final_completion.choices[0].message.tool_calls?.length ?? 0, deltas: helper_deltas,
                        finish: final_completion.choices[0].finish_reason},
            required: {finish: required.choices[0].finish_reason, n: required.choices[0].message.tool_calls?.length ?? 0},
            none: {finish: none.choices[0].finish_reason, calls: none.choices[0].message.tool_calls ?? null},
            prompt: tmpl.body.prompt, followup_finish: followup.choices[0].finish_reason, unknown,
            responses: {type: fc?.type, name: fc?.name, args: fc?.arguments, call_id: fc?.call_id,
                        status: resp.status},
            responses_stream: {events: revents, args: rargs, done: rdone, final_args: rfinal?.arguments ?? null,
                               final_name: rfinal?.name ?? null},
            rhistory_status: rhistory.status};
  },
  async timeout() {
    const before = (await raw('/health')).body;
    let chunks = 0, error = null;
    try {
      const stream = await client.chat.completions.create(
          {model: 'm', messages, temperature: 0, max_tokens: 30000, stream: true, ignore_eos: true});
      for await (const c of stream) chunks++;
    } catch (e) {
      error = String(e?.message ?? e);
    }
    let health = null;
    for (let i = 0; i < 200; i++) {
      health = (await raw('/health')).body;
      if (health.slots_processing === 0) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    return {before, health, chunks, error, slots: await raw('/slots')};
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
