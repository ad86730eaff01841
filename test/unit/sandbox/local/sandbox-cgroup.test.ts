import { describe, expect, it } from 'vitest';
import { cgroupBases } from '../../../../src/sandbox/local/sandbox-cgroup.js';

const mountV1 = [
  '39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids',
  '35 31 0:32 /docker/abc /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory',
].join('\n');

describe('cgroupBases', () => {
  it('finds the cgroup v1 hierarchy of each controller for this process', () => {
    expect(cgroupBases('8:pids:/\n4:memory:/docker/abc\n0::/\n', mountV1)).toEqual({
      pids: { dir: '/sys/fs/cgroup/pids', version: 1 },
      memory: { dir: '/sys/fs/cgroup/memory', version: 1 },
    });
    expect(cgroupBases('8:pids:/user.slice/a\n4:memory:/docker/abc/x\n', mountV1)).toEqual({
      pids: { dir: '/sys/fs/cgroup/pids/user.slice/a', version: 1 },
      memory: { dir: '/sys/fs/cgroup/memory/x', version: 1 },
    });
  });

  it('maps a path below a mount whose root is not the hierarchy root (containers)', () => {
    const mount = '50 31 0:36 /docker/abc /sys/fs/cgroup/pids rw - cgroup cgroup rw,pids';
    expect(cgroupBases('8:pids:/docker/abc/sub\n', mount).pids).toEqual({
      dir: '/sys/fs/cgroup/pids/sub',
      version: 1,
    });
    expect(cgroupBases('8:pids:/elsewhere\n', mount).pids).toBeUndefined();
  });

  it('uses the cgroup v2 directory of this process on a unified hierarchy', () => {
    const mount = '30 24 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate';
    const v2 = { dir: '/sys/fs/cgroup/system.slice/worker.service', version: 2 };
    expect(cgroupBases('0::/system.slice/worker.service\n', mount)).toEqual({ memory: v2, pids: v2 });
  });

  it('on a hybrid host takes v1 for a controller bound there and v2 for the rest', () => {
    const mounts = [
      '39 31 0:36 / /sys/fs/cgroup/pids rw - cgroup cgroup rw,pids',
      '40 31 0:37 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw',
    ].join('\n');
    expect(cgroupBases('8:pids:/a\n0::/b\n', mounts)).toEqual({
      pids: { dir: '/sys/fs/cgroup/pids/a', version: 1 },
      memory: { dir: '/sys/fs/cgroup/unified/b', version: 2 },
    });
  });

  it('returns nothing without any cgroup mount', () => {
    expect(cgroupBases('0::/\n', '')).toEqual({});
  });
});
