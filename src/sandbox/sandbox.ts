import type { Readable } from 'node:stream';
import type { PathPattern } from './path-pattern.js';

/**
 * The sandbox contract (DESIGN.md "Contracts"). Two drivers implement it: `local/` (bubblewrap on one
 * machine) and `kubernetes/` (a pod per job). Both pass `test/helpers/sandbox-contract.ts`.
 *
 * Everything the Leaf tools do to the repository goes through this interface, so a symlink inside the
 * repository can never make the host read or write a file outside the workspace.
 *
 * Paths given to file operations are either absolute (and must lie inside {@link Sandbox.workdir}) or
 * relative to it. A path that resolves outside the workspace, also through a symlink, is refused with
 * a {@link SandboxFileError} whose `errno` is `EACCES`.
 */
export interface Sandbox {
  /** Driver name, for logs and metrics: `local` or `kubernetes`. */
  readonly driver: string;
  /**
   * Absolute path of the repository workspace *as seen inside the sandbox* (also the cwd of
   * {@link exec}). Observations name files relative to it or absolute under it.
   */
  readonly workdir: string;

  /**
   * Run a command inside the sandbox. `command` is an argv array (no shell) or a string run by
   * `bash -c`. Never throws for a non-zero exit or a timeout: those are in the result. Throws
   * {@link AppError} `SANDBOX_GONE` when the sandbox died or was destroyed, and `SANDBOX_EXEC_FAILED`
   * when the command could not be started or its output stream was cut short.
   */
  exec(command: readonly string[] | string, options?: ExecOptions): Promise<ExecResult>;

  /**
   * Read a file's bytes. Throws {@link SandboxFileError} (`ENOENT`, `EISDIR`, `EACCES` for a path
   * outside the workspace, `EFBIG` above `maxBytes`).
   */
  readFile(path: string, options?: { maxBytes?: number }): Promise<Buffer>;

  /**
   * Write a file (replacing it), creating parent directories when `mkdirs` is true (default true).
   * Never follows a symlink out of the workspace: throws {@link SandboxFileError} `EACCES` instead.
   */
  writeFile(path: string, data: Buffer | string, options?: { mkdirs?: boolean }): Promise<void>;

  /**
   * List the regular files (and symlinks to files) below `dir` (default: the workdir), recursively,
   * as paths relative to `dir` with `/` separators, unsorted. Directories named `.git` are skipped.
   * Symlinked directories are not descended (no cycles, no escape); symlinks that dangle or lead
   * outside the workspace are left out silently, and so are directories themselves.
   * Stops after `limit` entries (default 100 000) and says so with `truncated`.
   */
  list(dir?: string, options?: { limit?: number }): Promise<{ files: string[]; truncated: boolean }>;

  /**
   * The files below `dir` whose path relative to `dir` matches `pattern` (see path-pattern.ts),
   * by the entry rules of {@link list} (regular files and symlinks to files inside the workspace,
   * `.git` skipped, symlinked directories not descended), unsorted. Matched while walking where
   * the driver can (directories the pattern cannot reach are not read), and never capped. Errors
   * as for `list`; a `regex` source that does not compile is the caller's bug (driver error).
   */
  findFiles(dir: string, pattern: PathPattern): Promise<string[]>;

  /**
   * Extract a tar stream (ustar/pax, as produced by `tar-stream` or `git archive`) into the
   * workdir. Throws {@link AppError} `SANDBOX_COPY_FAILED` when the archive is invalid or the copy
   * does not arrive whole.
   */
  copyIn(tar: Readable, options?: { timeoutMs?: number }): Promise<void>;

  /** Destroy the sandbox and everything in it. Idempotent; never throws. */
  destroy(): Promise<void>;
}

/** Options of {@link Sandbox.exec}. */
export interface ExecOptions {
  /** Wall-clock limit in milliseconds; on expiry the whole process group is killed (SIGKILL). */
  timeoutMs?: number;
  /** Bytes or text given on standard input (closed afterwards). */
  stdin?: Buffer | string;
  /**
   * Extra environment variables. The sandbox environment is built from scratch (PATH, HOME, LANG,
   * TERM…); nothing from the worker's environment is passed in.
   */
  env?: Record<string, string>;
  /** Working directory inside the sandbox; default {@link Sandbox.workdir}. */
  cwd?: string;
  /** Cap on the bytes kept of each of stdout and stderr; the rest is counted but dropped. */
  maxOutputBytes?: number;
  /** Aborting kills the command like a timeout (result has `timedOut: false`, `signal: 'SIGKILL'`). */
  signal?: AbortSignal;
}

/** Result of {@link Sandbox.exec}. Output is raw bytes: decoding is the caller's choice. */
export interface ExecResult {
  stdout: Buffer;
  stderr: Buffer;
  /** Exit status, or `null` when the process was ended by a signal. */
  exitCode: number | null;
  /** Name of the signal that ended the process (`SIGTERM`, `SIGKILL`…), else `null`. */
  signal: NodeJS.Signals | null;
  /** True when `timeoutMs` expired and the process group was killed. */
  timedOut: boolean;
  /** True when stdout or stderr was longer than `maxOutputBytes` and was cut. */
  outputTruncated: boolean;
  /** Wall-clock duration in milliseconds. */
  durationMs: number;
}

/**
 * A file operation refused or failed inside the sandbox. `errno` uses the POSIX names so that the
 * Leaf tools can render the Python-style observations of the reference harness
 * (`FileNotFoundError: [Errno 2] No such file or directory: '<path>'`).
 */
export class SandboxFileError extends Error {
  /** POSIX error name: `ENOENT`, `EISDIR`, `ENOTDIR`, `EACCES`, `EFBIG`, … */
  readonly errno: string;
  /**
   * Absolute path inside the sandbox that the operation was about, as the caller named it
   * (`workdir + '/' + relative path`, not normalised and not symlink-resolved).
   */
  readonly path: string;

  constructor(errno: string, path: string, message: string) {
    super(message);
    this.name = 'SandboxFileError';
    this.errno = errno;
    this.path = path;
  }
}

/** Creates sandboxes; one per candidate of a job (and a fresh one for each test run). */
export interface SandboxFactory {
  readonly driver: string;
  /**
   * Create an empty sandbox for `jobId`. The workspace starts empty; fill it with
   * {@link Sandbox.copyIn}. Throws {@link AppError} `SANDBOX_UNAVAILABLE` (with the fix in the
   * message, e.g. "install the Debian package bubblewrap") when the driver cannot start one.
   */
  create(options: CreateSandboxOptions): Promise<Sandbox>;
  /**
   * Remove what earlier, killed runs of `jobId` left on this host (local driver: its sandbox
   * folders, also those of `<jobId>-…` sandboxes). Only for a job that is not running elsewhere.
   * Resolves with the removed paths; never throws. Absent: the driver leaves nothing on the host.
   */
  removeLeftovers?(jobId: string): Promise<string[]>;
  /**
   * At worker start: remove what killed jobs left on this host, keeping the folders of
   * `activeJobIds` (and of their derived sandboxes). Resolves with the removed paths; never throws.
   */
  sweepLeftovers?(activeJobIds: readonly string[]): Promise<string[]>;
}

/** Options of {@link SandboxFactory.create}. */
export interface CreateSandboxOptions {
  /** Job id, used in names and labels. */
  jobId: string;
  /**
   * Host directory to use as the workspace (local driver only; `leaf-tool` uses it). When given, it
   * is bind-mounted at the same absolute path inside the sandbox instead of an empty private
   * workspace, without a size limit, and the sandbox runs as the worker's own uid. The pipeline and
   * `run` never use it: they copy the tracked files in.
   */
  hostWorkdir?: string;
  /** Limits; absent fields use the driver's defaults. */
  limits?: SandboxLimits;
  /**
   * The job's sandbox settings from the admin policy (image, resources, runtime class, time limit);
   * absent fields use the driver's defaults (the worker's environment).
   */
  settings?: SandboxSettings;
}

/** Kubernetes resource quantities by resource name (`cpu: '500m'`, `memory: '4Gi'`). */
export type SandboxQuantities = { cpu?: string; memory?: string; 'ephemeral-storage'?: string };

/**
 * Per-job sandbox settings, resolved from the admin policy (`EffectivePolicy.sandbox`, DESIGN.md
 * "Configuration"). Every sandbox of a job (agent, base tests, head tests) gets the same ones.
 *
 * - Kubernetes: `image` and `runtimeClassName` go to the pod as they are; `resources` become the
 *   container's requests and limits (quantity strings as given; a request not given equals the
 *   limit); `timeLimitMs` plus the driver's margin becomes `activeDeadlineSeconds`.
 * - Local (bubblewrap): `resources.limits.memory` becomes the per-process `RLIMIT_AS` and
 *   `resources.limits.ephemeral-storage` the size of the private `/tmp`; the image, the runtime class
 *   and the CPU limit cannot apply to host processes and are named in a warning log.
 */
export interface SandboxSettings {
  /** Container image of the sandbox; absent = the driver's default (SANDBOX_IMAGE). */
  image?: string;
  /** Requests and limits, Kubernetes quantity strings. */
  resources?: { requests?: SandboxQuantities; limits?: SandboxQuantities };
  /** RuntimeClass of the pod (e.g. `gvisor`); absent = the driver's default (SANDBOX_RUNTIME_CLASS). */
  runtimeClassName?: string;
  /** How long the sandbox may live, in milliseconds (the job's time limit for what runs in it). */
  timeLimitMs?: number;
}

/** Resource limits of a sandbox. Units are in the field names. */
export interface SandboxLimits {
  /** CPU seconds per command (RLIMIT_CPU locally; the pod's CPU limit in Kubernetes is cores). */
  cpuSeconds?: number;
  /** Memory in MiB. */
  memoryMiB?: number;
  /** Maximum number of processes. */
  maxProcesses?: number;
  /** Bytes kept of each output stream per command. */
  maxOutputBytes?: number;
  /**
   * Workspace size in MiB (Kubernetes emptyDir sizeLimit; locally the size of the sandbox's own
   * loop-mounted file system, except for a `hostWorkdir`).
   */
  diskMiB?: number;
}
