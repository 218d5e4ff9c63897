// Drives `strix serve` (tests/server/reasoning_test.cpp's synthetic Qwen 3
// model with a template that opens <think>) through the official `openai` and
// `@anthropic-ai/sdk` clients and plain fetch: the reasoning budget per request
// and from the flags, Anthropic's `thinking`, and id_slot. Prints one JSON
// object of observations.
//   node reasoning_client.mjs BASE_URL N STOP
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';

const [base, nArg, stop] = process.argv.slice(2);
const n = Number(nArg ?? 16);
const openai = new OpenAI({baseURL: `${base}/v1`, apiKey: 'none', maxRetries: 0, timeout: 60000});
const anthropic = new Anthropic({baseURL: base, apiKey: 'none', maxRetries: 0, timeout: 60000});
const messages = [{role: 'user', content: 'Hi'}];

async function raw(path, body) {
  const r = await fetch(base + path, {method: body ? 'POST' : 'GET', body: body ? JSON.stringify(body) : undefined,
    headers: {'content-type': 'application/json'}});
  const text = await r.text();
  let parsed = null;
  try { parsed = JSON.parse(text); } catch { parsed = text; }
  return {status: r.status, body: parsed};
}

async function apiError(fn) {
  try {
    await fn();
    return {status: 0};
  } catch (e) {
    return {status: e.status ?? -1, type: e.error?.error?.type ?? e.error?.type ?? null,
            message: e.error?.error?.message ?? e.error?.message ?? e.message, param: e.error?.param ?? null};
  }
}

// A greedy chat reply with its tokens (logprobs pieces).
async function chat(extra = {}) {
  const r = await openai.chat.completions.create(
      {model: 'm', messages, temperature: 0, max_tokens: n, logprobs: true, top_logprobs: 0, ...extra});
  const c = r.choices[0];
  return {tokens: c.logprobs.content.map((t) => t.token), reasoning: c.message.reasoning_content ?? null,
          content: c.message.content, finish: c.finish_reason, completion_tokens: r.usage.completion_tokens};
}

const out = {};
out.flag = await chat();  // the server's --reasoning-budget
out.request = await chat({reasoning_budget_tokens: 3});
out.thinking_field = await chat({thinking_budget_tokens: 3});
out.message = await chat({reasoning_budget_tokens: 3, reasoning_budget_message: 'Hm.'});
out.zero = await chat({reasoning_budget_tokens: 0});
// streamed: the same reasoning as deltas
{
  const stream = await openai.chat.completions.create(
      {model: 'm', messages, temperature: 0, max_tokens: n, stream: true, reasoning_budget_tokens: 3});
  let reasoning = '', content = '';
  for await (const chunk of stream) {
    for (const c of chunk.choices) {
      if (c.delta?.reasoning_content) reasoning += c.delta.reasoning_content;
      if (c.delta?.content) content += c.delta.content;
    }
  }
  out.stream = {reasoning, content};
}
out.template_zero = (await raw('/apply-template', {messages, reasoning_budget_tokens: 0})).body.prompt;
out.template_default = (await raw('/apply-template', {messages})).body.prompt;
out.bad_budget = await apiError(() => openai.chat.completions.create(
    {model: 'm', messages, max_tokens: 2, reasoning_budget_tokens: -2}));
out.bad_kwarg = await apiError(() => openai.chat.completions.create(
    {model: 'm', messages, max_tokens: 2, chat_template_kwargs: {enable_thinking: 'false'}}));
out.raw_no_tags = await raw('/completion', {prompt: 'Hi', n_predict: 2, reasoning_budget_tokens: 2});

// The Responses API: the same budgets (llama-server turns a Responses request into a chat one)
async function resp(extra) {
  const r = await openai.responses.create({model: 'm', input: 'Hi', temperature: 0, max_output_tokens: n, ...extra});
  const reasoning = r.output.filter((i) => i.type === 'reasoning')
      .map((i) => (i.content ?? []).map((c) => c.text).join('')).join('');
  return {reasoning: reasoning === '' ? null : reasoning, content: r.output_text ?? '', output_tokens: r.usage.output_tokens};
}
out.r_flag = await resp({});
out.r_request = await resp({reasoning_budget_tokens: 3});
out.r_thinking_field = await resp({thinking_budget_tokens: 3});
out.r_message = await resp({reasoning_budget_tokens: 3, reasoning_budget_message: 'Hm.'});
out.r_zero = await resp({reasoning_budget_tokens: 0});
{
  const stream = await openai.responses.create(
      {model: 'm', input: 'Hi', temperature: 0, max_output_tokens: n, stream: true, reasoning_budget_tokens: 3});
  let reasoning = '', content = '';
  for await (const e of stream) {
    if (e.type === 'response.reasoning_text.delta') reasoning += e.delta;
    if (e.type === 'response.output_text.delta') content += e.delta;
  }
  out.r_stream = {reasoning, content};
}
out.r_bad_budget = await apiError(() => openai.responses.create(
    {model: 'm', input: 'Hi', max_output_tokens: 2, reasoning_budget_tokens: -2}));
out.r_effort = await apiError(() => openai.responses.create(
    {model: 'm', input: 'Hi', max_output_tokens: 2, reasoning: {effort: 'low'}}));

// Anthropic's thinking
const amsg = (extra) => anthropic.messages.create({model: 'm', temperature: 0, messages, ...extra});
{
  const r = await amsg({max_tokens: 1100, thinking: {type: 'enabled', budget_tokens: 1024}, stop_sequences: [stop]});
  out.a_enabled = {types: r.content.map((b) => b.type), thinking: r.content[0]?.thinking ?? null,
                   stop_reason: r.stop_reason};
  const d = await amsg({max_tokens: n, thinking: {type: 'disabled'}});
  out.a_disabled = {types: d.content.map((b) => b.type), text: d.content.map((b) => b.text ?? b.thinking).join('')};
  const s = anthropic.messages.stream({model: 'm', temperature: 0, messages, max_tokens: 1100,
    thinking: {type: 'enabled', budget_tokens: 1024}, stop_sequences: [stop]});
  const deltas = [];
  for await (const e of s) {
    if (e.type === 'content_block_delta') deltas.push(e.delta.type);
  }
  out.a_stream_deltas = [...new Set(deltas)];
  out.a_count_on = (await anthropic.messages.countTokens(
      {model: 'm', messages, thinking: {type: 'enabled', budget_tokens: 1024}})).input_tokens;
  out.a_count_off = (await anthropic.messages.countTokens({model: 'm', messages, thinking: {type: 'disabled'}}))
      .input_tokens;
  out.a_small = await apiError(() => amsg({max_tokens: 2000, thinking: {type: 'enabled', budget_tokens: 1000}}));
  out.a_over = await apiError(() => amsg({max_tokens: 1500, thinking: {type: 'enabled', budget_tokens: 2000}}));
  out.a_missing = await apiError(() => amsg({max_tokens: 2000, thinking: {type: 'enabled'}}));
  out.a_adaptive = await apiError(() => amsg({max_tokens: 2000, thinking: {type: 'adaptive'}}));
}

// id_slot
out.slot_ok = (await raw('/completion', {prompt: 'Hi', n_predict: 2, id_slot: 1})).status;
out.slot_any = (await raw('/completion', {prompt: 'Hi', n_predict: 2, id_slot: -1})).status;
out.slot_chat = (await raw('/v1/chat/completions', {messages, max_tokens: 2, id_slot: 0})).status;
out.slot_range = await raw('/completion', {prompt: 'Hi', n_predict: 2, id_slot: 2});
out.slot_negative = await raw('/v1/chat/completions', {messages, max_tokens: 2, id_slot: -3});
process.stdout.write(JSON.stringify(out) + '\n');
