import { afterAll, describe, expect, it } from 'vitest';
import { checkCommandIsolation } from '../../../src/bin/commands/doctor.js';
import { createLocalSandboxFactory } from '../../../src/sandbox/local/local-sandbox.js';
import type { Sandbox } from '../../../src/sandbox/sandbox.js';

describe('doctor: local sandbox command isolation', () => {
  const sandboxes: Sandbox[] = [];
  afterAll(async () => {
    for (const sb of sandboxes) await sb.destroy();
  });

  it('says the seccomp filter is in force, and which pid namespace commands get', async () => {
    const sb = await createLocalSandboxFactory().create({ jobId: 'doctor-isolation' });
    sandboxes.push(sb);
    const check = await checkCommandIsolation(sb, 10_000);
    expect(check.status).toBe('ok');
    expect(check.detail).toMatch(/^no capabilities, no nested user namespaces/);
    // A root worker starts bubblewrap unprivileged (setpriv to SANDBOX_HOST_UID), so commands get
    // a pid namespace of their own there too.
    expect(check.detail).toMatch(/own pid namespace per command/);
  });

  it('fails with the fix when commands run without the launcher', async () => {
    // TESTING ONLY factory: its commands skip sandbox-exec, as a sandbox without the launcher would.
    const sb = await createLocalSandboxFactory({ exposeChannelForTests: true }).create({
      jobId: 'doctor-no-launcher',
    });
    sandboxes.push(sb);
    const check = await checkCommandIsolation(sb, 10_000);
    expect(check.status).toBe('failed');
    expect(check.detail).toContain('no seccomp filter');
    expect(check.fix).toContain('libseccomp-dev');
  });
});
