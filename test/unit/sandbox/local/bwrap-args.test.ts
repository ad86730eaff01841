import { describe, expect, it } from 'vitest';
import {
  buildBwrapArgs,
  limitsScript,
  type BwrapArgsInput,
} from '../../../../src/sandbox/local/bwrap-args.js';

const input: BwrapArgsInput = {
  layout: {
    rootSymlinks: [{ name: 'bin', target: 'usr/bin' }],
    rootDirs: ['lib64'],
    etcEntries: ['ld.so.cache', 'alternatives'],
    usrLocal: true,
  },
  hostWorkdir: '/srv/real/repo',
  workdir: '/tmp/frognano-1-abc/repo',
  etcDir: '/tmp/frognano-1-abc/etc',
  limitsFile: '/tmp/frognano-1-abc/etc/limits.sh',
  agentScript: '/app/dist/sandbox/local/sandbox-agent.cjs',
  nodePath: '/usr/bin/node',
  launcherPath: '/app/native/build/sandbox-exec',
  agentConfig: '{}',
  tmpSizeMiB: 64,
  shmSizeMiB: 16,
  shareNetwork: false,
};

/** Pairs `[flag, value…]` of the arguments, for order-insensitive checks. */
const has = (args: string[], ...seq: string[]): boolean =>
  args.some((_, i) => seq.every((s, j) => args[i + j] === s));

describe('buildBwrapArgs', () => {
  it('disables nested user namespaces and keeps only the launcher capabilities, launcher bound read-only', () => {
    const args = buildBwrapArgs(input);
    expect(args).toContain('--disable-userns');
    expect(has(args, '--cap-drop', 'ALL')).toBe(true);
    expect(has(args, '--cap-add', 'CAP_SYS_ADMIN')).toBe(true);
    expect(has(args, '--cap-add', 'CAP_SETPCAP')).toBe(true);
    expect(args.filter((a) => a === '--cap-add')).toHaveLength(2);
    expect(has(args, '--ro-bind', '/app/native/build/sandbox-exec', '/run/frognano/sandbox-exec')).toBe(true);
    expect(args).toContain('--as-pid-1');
    // --cap-drop ALL comes before the additions (bwrap applies them in order).
    expect(args.indexOf('--cap-drop')).toBeLessThan(args.indexOf('--cap-add'));
  });

  it('isolates every namespace and builds the environment from scratch', () => {
    const args = buildBwrapArgs(input);
    for (const flag of [
      '--unshare-user',
      '--unshare-net',
      '--unshare-pid',
      '--unshare-ipc',
      '--unshare-uts',
      '--die-with-parent',
      '--new-session',
      '--clearenv',
    ]) {
      expect(args).toContain(flag);
    }
    expect(has(args, '--uid', '1000')).toBe(true);
  });

  it('binds the system read-only, the workspace read-write at its own path, and nothing of the host else', () => {
    const args = buildBwrapArgs(input);
    expect(has(args, '--ro-bind', '/usr', '/usr')).toBe(true);
    expect(has(args, '--symlink', 'usr/bin', '/bin')).toBe(true);
    expect(has(args, '--ro-bind', '/lib64', '/lib64')).toBe(true);
    expect(has(args, '--ro-bind', '/etc/ld.so.cache', '/etc/ld.so.cache')).toBe(true);
    expect(has(args, '--bind', '/srv/real/repo', '/tmp/frognano-1-abc/repo')).toBe(true);
    expect(has(args, '--size', String(64 * 1024 * 1024), '--tmpfs', '/tmp')).toBe(true);
    expect(has(args, '--size', String(16 * 1024 * 1024), '--tmpfs', '/dev/shm')).toBe(true);
    // /usr/local is covered by an empty read-only tmpfs, after /usr is bound.
    expect(has(args, '--tmpfs', '/usr/local', '--remount-ro', '/usr/local')).toBe(true);
    expect(args.indexOf('/usr/local')).toBeGreaterThan(args.indexOf('/usr'));
    // The workspace bind comes after the /tmp tmpfs, or the tmpfs would hide it.
    expect(args.indexOf('--bind')).toBeGreaterThan(args.lastIndexOf('/tmp'));
    const writable = args.flatMap((a, i) => (a === '--bind' ? [args[i + 2]] : []));
    expect(writable).toEqual(['/tmp/frognano-1-abc/repo']);
    for (const hidden of ['/home', '/root', '/work', '/etc/shadow', '/run/secrets'])
      expect(args).not.toContain(hidden);
    expect(args.slice(args.indexOf('--'))).toEqual(['--', '/usr/bin/node', '/run/frognano/agent.cjs', '{}']);
  });

  it('shares the network only when asked to (testing)', () => {
    expect(buildBwrapArgs({ ...input, shareNetwork: true })).not.toContain('--unshare-net');
  });

  it('binds a node binary from outside /usr, or from the hidden /usr/local, into the agent directory', () => {
    for (const nodePath of ['/opt/node/bin/node', '/usr/local/bin/node']) {
      const args = buildBwrapArgs({ ...input, nodePath });
      expect(has(args, '--ro-bind', nodePath, '/run/frognano/node')).toBe(true);
      expect(args.slice(args.indexOf('--') + 1, args.indexOf('--') + 2)).toEqual(['/run/frognano/node']);
    }
  });
});

describe('limitsScript', () => {
  it('turns limits into ulimit calls and unsets BASH_ENV', () => {
    expect(limitsScript({ cpuSeconds: 1.5, memoryMiB: 256, maxProcesses: 64 })).toBe(
      'ulimit -c 0 2>/dev/null\nulimit -t 2 2>/dev/null\nulimit -v 262144 2>/dev/null\nulimit -u 64 2>/dev/null\nunset BASH_ENV\n',
    );
    expect(limitsScript({})).toBe('ulimit -c 0 2>/dev/null\nunset BASH_ENV\n');
  });
});
