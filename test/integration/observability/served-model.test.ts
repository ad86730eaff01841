/**
 * What the run record keeps about the served model: asked over HTTP of the scripted model server
 * (SGLang's wire format: `/v1/models`, `/get_model_info`), and of a port where nothing listens.
 */
import { createServer } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeServedModel, safeModelUrl } from '../../../src/observability/served-model.js';
import { startScriptedModelServer, type ScriptedModelServer } from '../../helpers/scripted-model-server.js';

let model: ScriptedModelServer;
beforeAll(async () => {
  model = await startScriptedModelServer({ script: [], modelName: 'microsoft/FrogNano-4B-2609' });
});
afterAll(() => model.close());

describe('describeServedModel', () => {
  it('keeps the served entry of /v1/models and SGLang model info', async () => {
    const served = await describeServedModel({
      modelUrl: model.url,
      modelName: 'microsoft/FrogNano-4B-2609',
    });
    expect(served.servedEntry).toMatchObject({ id: 'microsoft/FrogNano-4B-2609', owned_by: 'sglang' });
    expect(served.modelInfo).toMatchObject({ model_path: 'microsoft/FrogNano-4B-2609', is_generation: true });
    expect(served.notes).toEqual([]);
  });

  it('says so when the server serves another model', async () => {
    const served = await describeServedModel({ modelUrl: model.url, modelName: 'other/model' });
    expect(served.servedEntry).toBeNull();
    expect(served.notes).toEqual([
      'GET /v1/models: no entry for other/model (served: microsoft/FrogNano-4B-2609)',
    ]);
  });

  it('never throws when nothing answers; notes why', async () => {
    const port = await new Promise<number>((resolve) => {
      const s = createServer().listen(0, '127.0.0.1', () => {
        const p = (s.address() as { port: number }).port;
        s.close(() => resolve(p));
      });
    });
    const served = await describeServedModel({
      modelUrl: `http://127.0.0.1:${port}/v1`,
      modelName: 'm',
      timeoutMs: 2000,
    });
    expect(served).toMatchObject({ servedEntry: null, modelInfo: null });
    expect(served.notes).toHaveLength(2);
  });

  it('drops credentials from the recorded URL', () => {
    expect(safeModelUrl('http://user:secret@sglang:30000/v1?key=x')).toBe('http://sglang:30000/v1');
  });
});
