// Drives `strix serve` on a synthetic Qwen 3 model (tests/server/message_parts_test.cpp)
// through the official `openai` and `@anthropic-ai/sdk` clients: messages made of
// several text parts (chat, Responses, Anthropic), an Anthropic history whose
// tool_use input has its keys out of alphabetical order, and Claude Code's
// billing-header system prompt. Prints one JSON object.
//   node message_parts_client.mjs BASE_URL N
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';

const [base, nArg] = process.argv.slice(2);
const n = Number(nArg ?? 12);
const openai = new OpenAI({baseURL: `${base}/v1`, apiKey: 'none', maxRetries: 0, timeout: 60000});
const anthropic = new Anthropic({baseURL: base, apiKey: 'none', maxRetries: 0, timeout: 60000});
const text = (r) => r.content.filter((b) => b.type === 'text').map((b) => b.text).join('');

const out = {};
// chat: two text parts
const parts = [{role: 'user', content: [{type: 'text', text: 'Hi'}, {type: 'text', text: 'there'}]}];
{
  const r = await openai.chat.completions.create(
      {model: 'm', messages: parts, temperature: 0, max_tokens: n, logprobs: true, top_logprobs: 0});
  out.chat_tokens = r.choices[0].logprobs.content.map((t) => t.token);
  out.chat_prompt_tokens = r.usage.prompt_tokens;
  out.template_prompt = (await (await fetch(base + '/apply-template',
      {method: 'POST', body: JSON.stringify({messages: parts})})).json()).prompt;
}
// Responses: two input_text parts
{
  const r = await openai.responses.create({model: 'm', temperature: 0, max_output_tokens: n, input: [
    {type: 'message', role: 'user', content: [{type: 'input_text', text: 'Hi'}, {type: 'input_text', text: 'there'}]}]});
  out.responses_input_tokens = r.usage.input_tokens;
}
// Anthropic: two text blocks
{
  const req = {model: 'm', max_tokens: n, temperature: 0, messages: parts};
  out.anthropic_parts_text = text(await anthropic.messages.create(req));
  out.anthropic_parts_count = (await anthropic.messages.countTokens({model: 'm', messages: parts})).input_tokens;
}
// Anthropic: a tool_use given back with its input's keys in the client's order (unit before city)
{
  const messages = [
    {role: 'user', content: 'Weather in Paris?'},
    {role: 'assistant', content: [{type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: {unit: 'c', city: 'Paris'}}]},
    {role: 'user', content: [{type: 'tool_result', tool_use_id: 'toolu_1', content: '18 C'}]}];
  out.tool_history_text = text(await anthropic.messages.create({model: 'm', max_tokens: n, temperature: 0, messages}));
}
// Claude Code's billing header: its per-request cch stamp must not stop the prefix cache
{
  const sys = (cch) => `x-anthropic-billing-header: cc_version=2.1.101.e51; cc_entrypoint=cli; cch=${cch};You are a helpful assistant.`;
  const messages = [{role: 'user', content: 'Hi'}];
  const a = await anthropic.messages.create({model: 'm', max_tokens: n, temperature: 0, system: sys('a5145'), messages});
  const b = await anthropic.messages.create({model: 'm', max_tokens: n, temperature: 0, system: sys('0b9c2'), messages});
  out.billing_text = text(b);
  out.billing_count = (await anthropic.messages.countTokens({model: 'm', system: sys('77777'), messages})).input_tokens;
  out.billing_first_input = a.usage.input_tokens + (a.usage.cache_read_input_tokens ?? 0);
  out.billing_cached = b.usage.cache_read_input_tokens ?? 0;
  const c = await anthropic.messages.create({model: 'm', max_tokens: n, temperature: 0, system: sys('0b9c2'), messages});
  out.repeat_cached = c.usage.cache_read_input_tokens ?? 0;
  // not at the start of the system prompt: left as it is, so another stamp is another prompt early on
  const inner = (cch) => `Note: cch=${cch}; x-anthropic-billing-header: cc_version=2.1.101.e51; cc_entrypoint=cli; cch=${cch};You are a helpful assistant.`;
  await anthropic.messages.create({model: 'm', max_tokens: n, temperature: 0, system: inner('a5145'), messages});
  const d = await anthropic.messages.create({model: 'm', max_tokens: n, temperature: 0, system: inner('0b9c2'), messages});
  out.inner_cached = d.usage.cache_read_input_tokens ?? 0;
}
process.stdout.write(JSON.stringify(out) + '\n');
