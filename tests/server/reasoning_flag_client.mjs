// Drives `strix serve --reasoning off` (tests/server/reasoning_flag_test.cpp)
// through the official `openai` client and plain fetch: greedy chat tokens with
// the flag alone and with a request's enable_thinking, the rendered prompts,
// and the Responses API's prompt size. Prints one JSON object.
//   node reasoning_flag_client.mjs BASE_URL N
import OpenAI from 'openai';

const [base, nArg] = process.argv.slice(2);
const n = Number(nArg ?? 12);
const openai = new OpenAI({baseURL: `${base}/v1`, apiKey: 'none', maxRetries: 0, timeout: 60000});
const messages = [{role: 'user', content: 'Hi'}];

const chat = async (extra) => {
  const r = await openai.chat.completions.create(
      {model: 'm', messages, temperature: 0, max_tokens: n, logprobs: true, top_logprobs: 0, ...extra});
  return r.choices[0].logprobs.content.map((t) => t.token);
};
const tmpl = async (extra) => (await (await fetch(base + '/apply-template',
    {method: 'POST', body: JSON.stringify({messages, ...extra})})).json()).prompt;

const out = {flag: await chat({}), kwarg_on: await chat({chat_template_kwargs: {enable_thinking: true}}),
             prompt_flag: await tmpl({}), prompt_on: await tmpl({chat_template_kwargs: {enable_thinking: true}})};
const resp = await openai.responses.create({model: 'm', input: 'Hi', temperature: 0, max_output_tokens: n});
out.responses_tokens = resp.usage.input_tokens;
process.stdout.write(JSON.stringify(out) + '\n');
