import { spawn, type ChildProcess } from 'node:child_process';
import { lstatSync, readlinkSync } from 'node:fs';
import { mkdir, readFile } from 'node:fs/promises';
import path from 'node:path';

/**
 * The "container" of a stand-in pod: a long-lived bubblewrap sandbox (new user, PID, mount, IPC,
 * UTS and — unless the pod may reach the network — network namespaces) running the pod's idle
 * command, with the pod's `/workspace` and `/tmp` emptyDirs bound from host directories and a
 * read-only root made of the host's `/usr` and `/etc`. Exec'd commands join its namespaces with
 * `nsenter`, so — as in a real pod — they share one PID namespace and file system, outlive a closed
 * exec socket, and all die with the pod.
 *
 * A test double, not a security boundary: the host's /etc is visible read-only.
 */
export class PodRuntime {
  readonly #bwrap: ChildProcess;
  readonly #initPid: number;
  readonly #isolatedNetwork: boolean;
  readonly #uid: number;
  #dead = false;
  /** Resolves when the container ended (killed, or its idle command exited). */
  readonly exited: Promise<void>;

  private constructor(bwrap: ChildProcess, initPid: number, isolatedNetwork: boolean, uid: number) {
    this.#bwrap = bwrap;
    this.#initPid = initPid;
    this.#isolatedNetwork = isolatedNetwork;
    this.#uid = uid;
    this.exited = new Promise((resolve) => {
      if (bwrap.exitCode !== null || bwrap.signalCode !== null) resolve();
      else bwrap.once('close', () => resolve());
    });
    void this.exited.then(() => {
      this.#dead = true;
    });
  }

  /**
   * Start the container.
   *
   * @param hostDir host directory of the pod; `workspace/` and `tmp/` below it are created and
   *   bound at each `mountPath` given in `mounts` (`{name → mountPath}` of the pod's emptyDirs).
   * @param isolatedNetwork give the pod a network namespace of its own (no network at all).
   * @throws Error when bubblewrap cannot start (the message has its stderr).
   */
  static async start(options: {
    hostDir: string;
    mounts: { hostName: string; mountPath: string }[];
    workingDir: string;
    command: string[];
    isolatedNetwork: boolean;
    uid: number;
    /** Host name inside the pod (Kubernetes uses the pod's name). */
    hostname: string;
  }): Promise<PodRuntime> {
    const args = [
      '--unshare-user',
      '--unshare-pid',
      '--unshare-ipc',
      '--unshare-uts',
      '--unshare-cgroup-try',
    ];
    if (options.isolatedNetwork) args.push('--unshare-net');
    args.push('--uid', String(options.uid), '--gid', String(options.uid), '--hostname', options.hostname);
    args.push('--die-with-parent', '--clearenv');
    args.push(
      '--setenv',
      'PATH',
      '/usr/local/bin:/usr/bin:/bin',
      '--tmpfs',
      '/',
      '--ro-bind',
      '/usr',
      '/usr',
    );
    for (const name of ['bin', 'sbin', 'lib', 'lib32', 'lib64', 'libx32']) {
      try {
        const st = lstatSync(`/${name}`);
        if (st.isSymbolicLink()) args.push('--symlink', readlinkSync(`/${name}`), `/${name}`);
        else if (st.isDirectory()) args.push('--ro-bind', `/${name}`, `/${name}`);
      } catch {
        // absent on this host
      }
    }
    args.push('--ro-bind', '/etc', '/etc', '--proc', '/proc', '--dev', '/dev');
    for (const mount of options.mounts) {
      const host = path.join(options.hostDir, mount.hostName);
      await mkdir(host, { recursive: true });
      args.push('--dir', mount.mountPath, '--bind', host, mount.mountPath);
    }
    args.push('--remount-ro', '/', '--chdir', options.workingDir, '--info-fd', '3', '--', ...options.command);

    // bwrap's own process (PID 1 of the pod) keeps the environment it was started with: none.
    const bwrap = spawn('bwrap', args, {
      stdio: ['ignore', 'ignore', 'pipe', 'pipe'],
      env: { PATH: '/usr/bin:/bin' },
    });
    const info = bwrap.stdio[3] as NodeJS.ReadableStream;
    let stderr = '';
    bwrap.stderr?.on('data', (c: Buffer) => {
      stderr += c.toString('utf8');
    });
    const initPid = await new Promise<number>((resolve, reject) => {
      let text = '';
      const timer = setTimeout(
        () => reject(new Error('bwrap did not report its child pid within 10 s')),
        10_000,
      );
      info.on('data', (c: Buffer) => {
        text += c.toString('utf8');
        const match = /"child-pid":\s*(\d+)/.exec(text);
        if (match) {
          clearTimeout(timer);
          resolve(Number(match[1]));
        }
      });
      bwrap.once('error', (err) => {
        clearTimeout(timer);
        reject(
          new Error(`bwrap could not be started: ${err.message} (install the Debian package bubblewrap)`),
        );
      });
      bwrap.once('close', (code) => {
        clearTimeout(timer);
        reject(new Error(`bwrap exited with ${code} before the pod started: ${stderr.trim()}`));
      });
    });
    await waitForCommand(initPid, options.command[0]!, () => stderr);
    return new PodRuntime(bwrap, initPid, options.isolatedNetwork, options.uid);
  }

  /** False once the container ended. */
  get alive(): boolean {
    return !this.#dead;
  }

  /**
   * Start `argv` inside the container (its namespaces, root and uid), with piped stdio and an
   * environment of just PATH (as `kubectl exec` gives the container's env; the driver uses `env -i`).
   */
  exec(argv: string[]): ChildProcess {
    const ns = ['-U', '-m', '-p', '-i', '-u', ...(this.#isolatedNetwork ? ['-n'] : [])];
    return spawn(
      'nsenter',
      [
        '-t',
        String(this.#initPid),
        ...ns,
        '-S',
        String(this.#uid),
        '-G',
        String(this.#uid),
        '-r',
        '-w',
        '--',
        ...argv,
      ],
      { stdio: ['pipe', 'pipe', 'pipe'], env: { PATH: '/usr/local/bin:/usr/bin:/bin' } },
    );
  }

  /** Kill everything in the container (its PID namespace ends with its init). */
  async kill(): Promise<void> {
    if (this.#dead) return;
    try {
      process.kill(this.#initPid, 'SIGKILL');
    } catch {
      // already gone
    }
    this.#bwrap.kill('SIGKILL');
    await this.exited;
  }
}

/**
 * Wait until the container's command runs. bwrap reports its child's pid before that child has
 * set up the mounts; the command is exec'd (by a fork of that child, PID 1 of the pod) only after,
 * so a child whose argv[0] is the command means the pod is ready for `nsenter`.
 */
async function waitForCommand(initPid: number, program: string, stderr: () => string): Promise<void> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    try {
      const children = (await readFile(`/proc/${initPid}/task/${initPid}/children`, 'utf8'))
        .trim()
        .split(/\s+/);
      for (const child of children.filter(Boolean)) {
        const argv0 = (await readFile(`/proc/${child}/cmdline`, 'utf8').catch(() => '')).split('\0')[0];
        if (argv0 === program) return;
      }
    } catch {
      throw new Error(`the pod's bwrap exited while starting: ${stderr().trim()}`);
    }
    if (Date.now() > deadline) throw new Error(`the pod's command ${program} did not start within 10 s`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}
