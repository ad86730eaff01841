import { describe, expect, it } from 'vitest';
import { pidsCgroupBase } from '../../../../src/sandbox/local/pids-cgroup.js';

const mountV1 = [
  '39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids',
  '35 31 0:32 /docker/abc /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory',
].join('\n');

describe('pidsCgroupBase', () => {
  it('finds the cgroup v1 pids hierarchy of this process', () => {
    expect(pidsCgroupBase('8:pids:/\n4:memory:/x\n0::/\n', mountV1)).toEqual({
      dir: '/sys/fs/cgroup/pids',
      version: 1,
    });
    expect(pidsCgroupBase('8:pids:/user.slice/a\n', mountV1)).toEqual({
      dir: '/sys/fs/cgroup/pids/user.slice/a',
      version: 1,
    });
  });

  it('maps a path below a mount whose root is not the hierarchy root (containers)', () => {
    const mount = '50 31 0:36 /docker/abc /sys/fs/cgroup/pids rw - cgroup cgroup rw,pids';
    expect(pidsCgroupBase('8:pids:/docker/abc/sub\n', mount)).toEqual({
      dir: '/sys/fs/cgroup/pids/sub',
      version: 1,
    });
    expect(pidsCgroupBase('8:pids:/elsewhere\n', mount)).toBeUndefined();
  });

  it('uses the cgroup v2 directory of this process on a unified hierarchy', () => {
    const mount = '30 24 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate';
    expect(pidsCgroupBase('0::/system.slice/worker.service\n', mount)).toEqual({
      dir: '/sys/fs/cgroup/system.slice/worker.service',
      version: 2,
    });
  });

  it('returns undefined without any cgroup mount', () => {
    expect(pidsCgroupBase('0::/\n', '')).toBeUndefined();
  });
});
