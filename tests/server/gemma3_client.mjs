// Drives `strix serve` on a synthetic Gemma 3 model (tests/server/gemma3_test.cpp)
// through the official `openai` client: a greedy chat reply with its tokens, and
// a forced tool call in llama.cpp's generic JSON format, whole and streamed, its
// arguments checked by ajv against the tool's schema. Prints one JSON object.
//   node gemma3_client.mjs BASE_URL N
import OpenAI from 'openai';
import Ajv from 'ajv';

const [base, nArg] = process.argv.slice(2);
const n = Number(nArg ?? 12);
const openai = new OpenAI({baseURL: `${base}/v1`, apiKey: 'none', maxRetries: 0, timeout: 120000});
const messages = [{role: 'user', content: 'Hi'}];

const out = {};
{
  const r = await openai.chat.completions.create(
      {model: 'm', messages, temperature: 0, max_tokens: n, logprobs: true, top_logprobs: 0});
  out.tokens = r.choices[0].logprobs.content.map((t) => t.token);
  out.content = r.choices[0].message.content;
  out.prompt_tokens = r.usage.prompt_tokens;
}
const parameters = {type: 'object', properties: {city: {type: 'string', enum: ['Paris', 'Oslo']}},
                    required: ['city'], additionalProperties: false};
const tools = [{type: 'function', function: {name: 'get_weather', description: 'Weather', parameters}}];
const req = {model: 'm', messages: [{role: 'user', content: 'Weather in Paris?'}], temperature: 0, max_tokens: 300,
             tools, tool_choice: {type: 'function', function: {name: 'get_weather'}}, parallel_tool_calls: false};
{
  const r = await openai.chat.completions.create(req);
  const c = r.choices[0];
  const call = c.message.tool_calls?.[0];
  out.finish = c.finish_reason;
  out.content_null = c.message.content === null;
  out.name = call?.function.name ?? null;
  out.args = call?.function.arguments ?? null;
  out.args_valid = call ? new Ajv().validate(parameters, JSON.parse(call.function.arguments)) : false;
  out.tool_prompt_tokens = r.usage.prompt_tokens;
}
{
  const stream = await openai.chat.completions.create({...req, stream: true});
  let args = '', name = null;
  for await (const chunk of stream) {
    for (const tc of chunk.choices[0]?.delta?.tool_calls ?? []) {
      if (tc.function?.name) name = tc.function.name;
      args += tc.function?.arguments ?? '';
    }
  }
  out.stream_name = name;
  out.stream_args = args;
}
// tool_choice none: no tools in the prompt, no parsing: the plain greedy reply
{
  const r = await openai.chat.completions.create(
      {model: 'm', messages, temperature: 0, max_tokens: n, tools, tool_choice: 'none'});
  out.none_content = r.choices[0].message.content;
  out.none_calls = r.choices[0].message.tool_calls ?? null;
}
out.tool_prompt = (await (await fetch(base + '/apply-template', {method: 'POST',
    body: JSON.stringify({messages: req.messages, tools})})).json()).prompt;
process.stdout.write(JSON.stringify(out) + '\n');
