import { mkdirSync, mkdtempSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isAppError } from '../../../src/app-error.js';
import {
  createPolicyStore,
  createStaticPolicyStore,
  type PolicyStore,
} from '../../../src/config/policy-store.js';
import { EMPTY_ADMIN_POLICY, resolveEffectivePolicy } from '../../../src/config/policy.js';
import { createLogger } from '../../../src/observability/logger.js';

/** Poll `check` every 20 ms until it returns true; fail after `limitMs` with `what`. */
async function waitUntil(check: () => boolean, what: string, limitMs = 5_000): Promise<void> {
  const deadline = Date.now() + limitMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${limitMs} ms waiting until ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const GOOD_A = 'defaults:\n  maxSteps: 40\n';
const GOOD_B = 'defaults:\n  maxSteps: 80\n';
const BROKEN = 'defaults:\n  maxSteps: many\n';

describe('createPolicyStore', () => {
  let dir: string;
  let logLines: string[];
  let store: PolicyStore | undefined;
  const logger = () =>
    createLogger({ level: 'info', destination: { write: (line: string) => void logLines.push(line) } });
  const maxSteps = (s: PolicyStore): number =>
    resolveEffectivePolicy({ policy: s.current(), repo: 'a/b' }).maxSteps;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'frognano-policy-'));
    logLines = [];
  });
  afterEach(() => {
    store?.close();
    store = undefined;
    rmSync(dir, { recursive: true, force: true });
  });

  it('throws CONFIG_INVALID at start for an invalid or missing file (the server must not start)', () => {
    const path = join(dir, 'policy.yaml');
    writeFileSync(path, BROKEN);
    let err: unknown;
    try {
      createPolicyStore({ path, logger: logger(), watch: false });
    } catch (e) {
      err = e;
    }
    expect(isAppError(err, 'CONFIG_INVALID')).toBe(true);
    expect((err as { details: { messages: string[] } }).details.messages).toEqual([
      `${path}: defaults.maxSteps: must be a whole number from 1 to 150 (got "many")`,
    ]);
    expect(() =>
      createPolicyStore({ path: join(dir, 'missing.yaml'), logger: logger(), watch: false }),
    ).toThrow(/cannot read the admin policy/);
  });

  it('reload(): a changed file takes effect; a broken one keeps the last good policy and exposes the error', async () => {
    const path = join(dir, 'policy.yaml');
    writeFileSync(path, GOOD_A);
    store = createPolicyStore({ path, logger: logger(), watch: false });
    expect(maxSteps(store)).toBe(40);
    expect(store.lastError()).toBeNull();

    writeFileSync(path, GOOD_B);
    expect(await store.reload()).toEqual({ ok: true, changed: true });
    expect(maxSteps(store)).toBe(80);

    writeFileSync(path, BROKEN);
    const failed = await store.reload();
    expect(failed.ok).toBe(false);
    expect(maxSteps(store)).toBe(80);
    expect(store.lastError()?.messages).toEqual([
      `${path}: defaults.maxSteps: must be a whole number from 1 to 150 (got "many")`,
    ]);
    const logged = logLines.map((l) => JSON.parse(l) as { level: number; msg: string; messages?: string[] });
    expect(logged).toContainEqual(
      expect.objectContaining({
        level: 50,
        msg: 'admin policy reload failed; the last good policy stays in force',
        messages: store.lastError()?.messages,
      }),
    );

    rmSync(path);
    expect((await store.reload()).ok).toBe(false);
    expect(store.lastError()?.message).toMatch(/ENOENT/);
    expect(maxSteps(store)).toBe(80);

    writeFileSync(path, GOOD_B);
    expect(await store.reload()).toEqual({ ok: true, changed: false });
    expect(store.lastError()).toBeNull();
  });

  it('watches: an edited file takes effect without a restart, a broken edit is refused', async () => {
    const path = join(dir, 'policy.yaml');
    writeFileSync(path, GOOD_A);
    const changes: number[] = [];
    store = createPolicyStore({
      path,
      logger: logger(),
      intervalMs: 100,
      onChange: (p) => changes.push(resolveEffectivePolicy({ policy: p, repo: 'a/b' }).maxSteps),
    });
    writeFileSync(path, GOOD_B);
    const s = store;
    await waitUntil(() => maxSteps(s) === 80, 'the edited policy is in force');
    expect(changes.at(-1)).toBe(80);
    writeFileSync(path, BROKEN);
    await waitUntil(() => s.lastError() !== null, 'the broken policy is reported');
    expect(maxSteps(s)).toBe(80);
  });

  it('follows a Kubernetes ConfigMap update (atomic swap of the ..data symlink)', async () => {
    // The layout kubelet writes: policy.yaml -> ..data/policy.yaml, ..data -> ..<timestamp dir>.
    mkdirSync(join(dir, '..2024_01'));
    writeFileSync(join(dir, '..2024_01', 'policy.yaml'), GOOD_A);
    symlinkSync('..2024_01', join(dir, '..data'));
    symlinkSync(join('..data', 'policy.yaml'), join(dir, 'policy.yaml'));
    // A long stat period: the directory watch alone must notice the swap.
    store = createPolicyStore({ path: join(dir, 'policy.yaml'), logger: logger(), intervalMs: 60_000 });
    expect(maxSteps(store)).toBe(40);

    mkdirSync(join(dir, '..2024_02'));
    writeFileSync(join(dir, '..2024_02', 'policy.yaml'), GOOD_B);
    symlinkSync('..2024_02', join(dir, '..data_tmp'));
    renameSync(join(dir, '..data_tmp'), join(dir, '..data'));
    rmSync(join(dir, '..2024_01'), { recursive: true });
    const s = store;
    await waitUntil(() => maxSteps(s) === 80, 'the swapped ConfigMap policy is in force');
    expect(s.lastError()).toBeNull();
  });

  it('a static store serves the built-in policy', async () => {
    const s = createStaticPolicyStore();
    expect(s.current()).toBe(EMPTY_ADMIN_POLICY);
    expect(await s.reload()).toEqual({ ok: true, changed: false });
    expect(s.path).toBeNull();
  });
});
