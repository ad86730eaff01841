import { constants as osConstants } from 'node:os';
import { pyRepr } from './python-repr.js';

/**
 * A Python exception as the reference Leaf tool runner reports it. The runner catches every exception
 * of a tool and returns `f"{type(exc).__name__}: {exc}"` as the observation, so a tool that fails
 * throws a `PythonError` and {@link PythonError.observation} renders exactly that line.
 *
 * Source of the format: `frognano/harness/leaf/tool_runner.py` (`run_tool`) of microsoft/FrogNano.
 *
 * Changes together with the other `python-*.ts` files and the parity suite
 * (`test/fixtures/leaf-parity/`, `test/integration/leaf/parity.test.ts`): the observations must stay
 * byte-identical to the reference.
 */
export class PythonError extends Error {
  /** Python exception class name, e.g. `ValueError`, `FileNotFoundError`. */
  readonly pythonType: string;

  constructor(pythonType: string, message: string) {
    super(message);
    this.name = 'PythonError';
    this.pythonType = pythonType;
  }

  /** The observation string: `<type>: <message>`. */
  get observation(): string {
    return `${this.pythonType}: ${this.message}`;
  }
}

/**
 * glibc `strerror` texts of the errno values a file tool can meet (Python prints these, and Node's
 * libuv texts differ in wording and case).
 */
const STRERROR: Record<string, string> = {
  EPERM: 'Operation not permitted',
  ENOENT: 'No such file or directory',
  EIO: 'Input/output error',
  EACCES: 'Permission denied',
  EBUSY: 'Device or resource busy',
  EEXIST: 'File exists',
  EXDEV: 'Invalid cross-device link',
  ENOTDIR: 'Not a directory',
  EISDIR: 'Is a directory',
  EINVAL: 'Invalid argument',
  EMFILE: 'Too many open files',
  ETXTBSY: 'Text file busy',
  EFBIG: 'File too large',
  ENOSPC: 'No space left on device',
  EROFS: 'Read-only file system',
  EMLINK: 'Too many links',
  ENAMETOOLONG: 'File name too long',
  ELOOP: 'Too many levels of symbolic links',
  EDQUOT: 'Disk quota exceeded',
};

/** Python's OSError subclass per errno (PEP 3151), for the errno values a file tool can meet. */
const PYTHON_OS_ERROR_CLASS: Record<string, string> = {
  ENOENT: 'FileNotFoundError',
  EEXIST: 'FileExistsError',
  EISDIR: 'IsADirectoryError',
  ENOTDIR: 'NotADirectoryError',
  EACCES: 'PermissionError',
  EPERM: 'PermissionError',
  EINTR: 'InterruptedError',
  ETIMEDOUT: 'TimeoutError',
};

/**
 * The Python `OSError` an `open()`/`mkdir()` on `path` would raise for the POSIX error `errno`
 * (a name such as `ENOENT`): `FileNotFoundError: [Errno 2] No such file or directory: '<path>'`.
 * `path` is quoted with Python `repr`. An unknown errno name becomes a plain `OSError`.
 *
 * @param suffix text appended after the quoted path (used for the workspace-escape refusal).
 */
export function pythonOsError(errno: string, path: string, suffix = ''): PythonError {
  const numbers = osConstants.errno as Record<string, number | undefined>;
  const code = numbers[errno];
  const type = PYTHON_OS_ERROR_CLASS[errno] ?? 'OSError';
  const text = STRERROR[errno] ?? errno;
  const head = code === undefined ? `[${errno}] ${text}` : `[Errno ${code}] ${text}`;
  return new PythonError(type, `${head}: ${pyRepr(path)}${suffix}`);
}

/** Suffix of the observation when a path resolves outside the workspace (our addition). */
export const OUTSIDE_WORKSPACE_SUFFIX = ' (path resolves outside the workspace)';
