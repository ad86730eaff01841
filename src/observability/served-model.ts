/**
 * What the model server says about the model it serves, for the run record: the model's entry of
 * the OpenAI-compatible `GET /v1/models` list (`{ id, object, created, owned_by, root, max_model_len… }`),
 * and SGLang's native `GET /get_model_info` at the server root (`{ model_path, tokenizer_path,
 * is_generation, preferred_sampling_params, weight_version… }`; SGLang docs "Native APIs"). A server
 * that does not answer one of them leaves it `null` with a note; this never throws.
 */
export interface ServedModel {
  servedEntry: Record<string, unknown> | null;
  modelInfo: Record<string, unknown> | null;
  notes: string[];
}

/** MODEL_URL without user info, query or fragment (a URL can carry credentials). */
export function safeModelUrl(modelUrl: string): string {
  try {
    const u = new URL(modelUrl);
    u.username = '';
    u.password = '';
    u.search = '';
    u.hash = '';
    return u.toString().replace(/\/+$/, '');
  } catch {
    return '(not a URL)';
  }
}

/**
 * Ask the server. `modelUrl` ends in `/v1` (MODEL_URL); `/get_model_info` is looked up next to it.
 *
 * @param options.timeoutMs per request (default 5 000 ms).
 */
export async function describeServedModel(options: {
  modelUrl: string;
  modelName: string;
  apiKey?: string | null;
  timeoutMs?: number;
}): Promise<ServedModel> {
  const notes: string[] = [];
  const headers: Record<string, string> = { accept: 'application/json' };
  if (options.apiKey) headers.authorization = `Bearer ${options.apiKey}`;
  const base = options.modelUrl.replace(/\/+$/, '');
  const getJson = async (url: string, what: string): Promise<unknown> => {
    try {
      const res = await fetch(url, { headers, signal: AbortSignal.timeout(options.timeoutMs ?? 5_000) });
      if (!res.ok) {
        notes.push(`${what}: HTTP ${res.status}`);
        return null;
      }
      return (await res.json()) as unknown;
    } catch (err) {
      notes.push(`${what}: ${err instanceof Error ? err.message : String(err)}`);
      return null;
    }
  };
  const isObject = (v: unknown): v is Record<string, unknown> =>
    typeof v === 'object' && v !== null && !Array.isArray(v);

  let servedEntry: Record<string, unknown> | null = null;
  const list = await getJson(`${base}/models`, 'GET /v1/models');
  if (isObject(list) && Array.isArray(list.data)) {
    const entries = list.data.filter(isObject);
    servedEntry = entries.find((e) => e.id === options.modelName) ?? null;
    if (!servedEntry) {
      notes.push(
        `GET /v1/models: no entry for ${options.modelName} (served: ${entries.map((e) => String(e.id)).join(', ') || 'none'})`,
      );
    }
  } else if (list !== null) notes.push('GET /v1/models: not an OpenAI model list');

  const root = base.replace(/\/v1$/, '');
  const info = await getJson(`${root}/get_model_info`, 'GET /get_model_info');
  const modelInfo = isObject(info) ? info : null;
  if (info !== null && !modelInfo) notes.push('GET /get_model_info: not a JSON object');
  return { servedEntry, modelInfo, notes };
}
