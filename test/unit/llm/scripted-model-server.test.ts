import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  startScriptedModelServer,
  toQwen3CoderXml,
  type ScriptedModelServer,
} from '../../helpers/scripted-model-server.js';

let server: ScriptedModelServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- the tests read arbitrary response fields
async function post(url: string, body: unknown): Promise<{ status: number; json: any }> {
  const res = await fetch(`${url}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, json: JSON.parse(text) };
}

const body = { model: 'm', messages: [{ role: 'user', content: 'x'.repeat(400) }] };

describe('startScriptedModelServer (test helper)', () => {
  it("answers in SGLang's chat completion shape and records the request", async () => {
    server = await startScriptedModelServer({
      script: [
        {
          kind: 'tool_calls',
          calls: [{ name: 'Glob', arguments: { pattern: '*.py' } }],
          usage: { completion_tokens: 7 },
        },
      ],
      modelName: 'served',
    });
    expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/v1$/);
    const { status, json } = await post(server.url, body);
    expect(status).toBe(200);
    expect(json).toMatchObject({
      object: 'chat.completion',
      model: 'served',
      choices: [
        {
          index: 0,
          finish_reason: 'tool_calls',
          message: {
            role: 'assistant',
            content: null,
            reasoning_content: null,
            tool_calls: [
              { index: 0, type: 'function', function: { name: 'Glob', arguments: '{"pattern":"*.py"}' } },
            ],
          },
        },
      ],
    });
    expect(typeof json.id).toBe('string');
    expect(typeof json.created).toBe('number');
    expect(json.choices[0].message.tool_calls[0].id).toMatch(/^call_/);
    const promptTokens = Math.ceil(JSON.stringify(body.messages).length / 4);
    expect(json.usage).toEqual({
      prompt_tokens: promptTokens,
      completion_tokens: 7,
      total_tokens: promptTokens + 7,
    });
    expect(server.requests).toHaveLength(1);
    expect(server.requests[0]?.body).toEqual(body);
  });

  it('answers past the end of the script with a 400 that says so', async () => {
    server = await startScriptedModelServer({ script: [] });
    const { status, json } = await post(server.url, body);
    expect(status).toBe(400);
    expect(json.message).toContain('script exhausted');
  });

  it('takes a script function of the request and its index', async () => {
    server = await startScriptedModelServer({
      script: (req, i) => ({ kind: 'final', content: `turn ${i} for ${req.body.model}` }),
    });
    expect((await post(server.url, body)).json.choices[0].message.content).toBe('turn 0 for m');
    expect((await post(server.url, body)).json.choices[0].message.content).toBe('turn 1 for m');
  });

  it('serves the model list and 404 for other routes', async () => {
    server = await startScriptedModelServer({ script: [] });
    const models = (await (await fetch(`${server.url}/models`)).json()) as { data: Array<{ id: string }> };
    expect(models.data.map((m) => m.id)).toEqual(['microsoft/FrogNano-4B-2609']);
    expect((await fetch(`${server.url}/completions`, { method: 'POST', body: '{}' })).status).toBe(404);
    expect(server.modelListRequests).toBe(1);
    expect(server.requests).toHaveLength(0);
  });

  it('closes while a delayed answer is pending', async () => {
    server = await startScriptedModelServer({
      script: [{ kind: 'final', content: 'late', delayMs: 60_000 }],
    });
    const pending = post(server.url, body).then(
      () => 'answered',
      () => 'connection closed',
    );
    const s = server;
    await vi.waitFor(() => expect(s.requests).toHaveLength(1), { timeout: 5_000, interval: 5 });
    await server.close();
    expect(await pending).toBe('connection closed');
  });

  it('writes qwen3_coder XML the way the model does', () => {
    expect(toQwen3CoderXml({ name: 'Read', arguments: { file_path: 'a.py', limit: 5 } })).toBe(
      '<tool_call>\n<function=Read>\n<parameter=file_path>\na.py\n</parameter>\n<parameter=limit>\n5\n</parameter>\n</function>\n</tool_call>',
    );
    expect(toQwen3CoderXml({ name: 'Glob', arguments: {} }, true)).toBe(
      '<function=Glob>\n</function>\n</tool_call>',
    );
  });
});
