import { describe, expect, it } from 'vitest';
import { formatDoctorReport, localLimitChecks } from '../../../src/bin/commands/doctor.js';
import { createSilentLogger } from '../../../src/observability/logger.js';
import { createLocalSandboxFactory } from '../../../src/sandbox/local/local-sandbox.js';
import { probeCgroupSupport } from '../../../src/sandbox/local/sandbox-cgroup.js';

const NAMES = [
  'sandbox memory limit (all processes, /tmp and /dev/shm included)',
  'swap cannot stretch the sandbox memory limit',
  'sandbox process limit',
  'sandbox workspace size limit',
  'sandbox runs as an unprivileged host uid',
];

describe('doctor: the local driver\u2019s whole-sandbox limits', () => {
  it('lists every limit as enforced on this host (root, cgroup v1 memory and pids, loop devices)', async () => {
    const sb = await createLocalSandboxFactory().create({ jobId: 'doctor-limits' });
    try {
      const checks = localLimitChecks(sb.enforced, await probeCgroupSupport(createSilentLogger()), false);
      expect(checks.map((c) => c.name)).toEqual(NAMES);
      expect(
        checks.filter((c) => c.status !== 'ok'),
        'run the tests as root on a host with the cgroup v1 memory and pids hierarchies (or delegated cgroup v2), loop devices and mke2fs',
      ).toEqual([]);
      expect(checks[0]?.detail).toMatch(/^cgroup v[12] memory under \//);
      expect(checks[2]?.detail).toMatch(/^cgroup v[12] pids under \//);
    } finally {
      await sb.destroy();
    }
  });

  it('names what is missing, the fix, and what the worker does about it', () => {
    const none = { memory: false, swap: false, processes: false, disk: false, unprivileged: false };
    const support = {
      memory: { missing: 'the cgroup v2 controller memory is not delegated to /sys/fs/cgroup/user.slice' },
      pids: { dir: '/sys/fs/cgroup/pids', version: 1 as const },
    };
    const refused = localLimitChecks(none, support, false);
    expect(refused.every((c) => c.status === 'failed')).toBe(true);
    expect(refused[0]?.detail).toContain('the worker refuses to start sandboxes');
    expect(refused[0]?.detail).toContain('not delegated to /sys/fs/cgroup/user.slice');
    expect(refused[0]?.fix).toContain('Delegate=yes');
    expect(refused[3]?.fix).toContain('e2fsprogs');
    const report = formatDoctorReport(localLimitChecks(none, support, true));
    expect(report).toContain(
      '✗ sandbox workspace size limit — not enforced (SANDBOX_ALLOW_UNLIMITED=true: the worker runs sandboxes without it)',
    );
    expect(report).toContain('fix: run the worker as root with loop devices');
  });
});
