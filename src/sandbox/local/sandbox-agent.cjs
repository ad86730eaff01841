'use strict';
/*
 * FrogNano in-sandbox agent (local driver).
 *
 * Changes together with `agent-connection.ts` (requests, nonces, reply caps) and `frame-decoder.ts`
 * (the frame format) on the host side, and `native/sandbox-exec.c` (how commands start).
 *
 * One copy runs per sandbox, started once by `bwrap` as `node agent.cjs '<config json>'`, so that a
 * tool call costs one round trip over a pipe instead of a new bubblewrap sandbox (tens of ms).
 * Plain CommonJS with Node built-ins only: it runs inside the sandbox, where node_modules is not
 * mounted. Everything it touches is what the sandbox sees (the workspace, a private /tmp, read-only
 * system directories), so even a bug here cannot reach the host's files.
 *
 * Channel: one socket on fd 3 (not stdio: bubblewrap's own pid 1 keeps stdio open, and a command
 * could reach it there; it closes fd 3). Commands never get fd 3: they start through
 * `sandbox-exec` (native/sandbox-exec.c), which closes every fd above 2, drops every capability and
 * loads the seccomp filter before the command runs, in a pid namespace of its own where the
 * kernel allows one. This agent keeps CAP_SYS_ADMIN and CAP_SETPCAP (bwrap --cap-add), so commands
 * cannot ptrace it, open /proc/<agent>/fd or pidfd_getfd its socket even where they see its pid.
 *
 * Wire format (both directions), one frame per message:
 *   u32 BE header length | u32 BE body length | header (UTF-8 JSON) | body (raw bytes)
 * The header lists the byte lengths of the blobs concatenated in the body (`blobs`), so file
 * contents and command output travel as raw bytes (no base64, no UTF-8 assumption).
 * Requests carry a numeric `id` and a random `nonce`; responses echo both, with `ok: true` and
 * result fields, or `ok: false` and `error: { kind: 'file' | 'exec' | 'protocol', errno?, path?,
 * message }`. The host treats any other reply as a protocol violation and destroys the sandbox.
 * Requests are served concurrently; file operations are synchronous (fast, and ordered as they
 * arrive). At start the agent sends `{ id: 0, event: 'ready', pid }`.
 *
 * Config (argv[2], JSON): { workdir, env: {..} (base environment of commands), limitsFile (a
 * read-only bash script of `ulimit` calls, sourced by every command through BASH_ENV), launcher
 * (path of sandbox-exec inside the sandbox), exposeChannel (TESTING ONLY: hand commands the
 * channel as fd 3, to prove that the host survives forged frames) }.
 */
const fs = require('node:fs');
const path = require('node:path');
const net = require('node:net');
const { spawn } = require('node:child_process');

const config = JSON.parse(process.argv[2] || '{}');
const WORKDIR = path.resolve(config.workdir);
const WORKDIR_REAL = fs.realpathSync(WORKDIR);
const BASE_ENV = config.env || {};
const DEFAULT_MAX_OUTPUT = 10 * 1024 * 1024;
const MAX_READ_BYTES = 512 * 1024 * 1024;
/** Grace after a kill before we stop waiting for pipes held open by an escaped process (ms). */
const KILL_GRACE_MS = 1000;
/** Grace after a kill before the launcher itself is killed, when it did not end by itself (ms). */
const LAUNCHER_GRACE_MS = 300;

process.umask(0o022);

// ---------------------------------------------------------------------------------------------
// Framing

const channel = new net.Socket({ fd: 3, readable: true, writable: true });
/** Nonce of each request being served (id -> nonce), echoed in its reply. */
const nonces = new Map();
let inChunks = [];
let inBytes = 0;

function send(header, blobs) {
  const parts = blobs || [];
  const nonce = nonces.get(header.id);
  nonces.delete(header.id);
  const h = Buffer.from(
    JSON.stringify(Object.assign({}, header, { nonce, blobs: parts.map((b) => b.length) })),
  );
  let bodyLen = 0;
  for (const b of parts) bodyLen += b.length;
  const pre = Buffer.allocUnsafe(8);
  pre.writeUInt32BE(h.length, 0);
  pre.writeUInt32BE(bodyLen, 4);
  if (bodyLen < 65536) {
    channel.write(Buffer.concat([pre, h, ...parts]));
  } else {
    // Separate writes keep large outputs from being copied again; frames cannot interleave because
    // writes to the same stream are queued in order.
    channel.write(Buffer.concat([pre, h]));
    for (const b of parts) if (b.length > 0) channel.write(b);
  }
}

function onData(chunk) {
  inChunks.push(chunk);
  inBytes += chunk.length;
  for (;;) {
    if (inBytes < 8) return;
    if (inChunks[0].length < 8) inChunks = [Buffer.concat(inChunks)];
    const first = inChunks[0];
    const hLen = first.readUInt32BE(0);
    const bLen = first.readUInt32BE(4);
    const total = 8 + hLen + bLen;
    if (inBytes < total) return;
    const all = inChunks.length === 1 ? first : Buffer.concat(inChunks);
    const rest = all.subarray(total);
    inChunks = rest.length > 0 ? [rest] : [];
    inBytes = rest.length;
    let header;
    try {
      header = JSON.parse(all.toString('utf8', 8, 8 + hLen));
    } catch (err) {
      process.stderr.write(`agent: bad frame header: ${String(err)}\n`);
      continue;
    }
    const body = all.subarray(8 + hLen, total);
    const blobs = [];
    let off = 0;
    for (const n of Array.isArray(header.blobs) ? header.blobs : []) {
      blobs.push(body.subarray(off, off + n));
      off += n;
    }
    dispatch(header, blobs);
  }
}

// ---------------------------------------------------------------------------------------------
// Errors

const ERRNO_TEXT = {
  ENOENT: 'No such file or directory',
  EISDIR: 'Is a directory',
  ENOTDIR: 'Not a directory',
  EACCES: 'Permission denied',
  EFBIG: 'File too large',
  EINVAL: 'Invalid argument',
  EEXIST: 'File exists',
  ELOOP: 'Too many levels of symbolic links',
};

class FileError extends Error {
  constructor(errno, filePath, detail) {
    const text = ERRNO_TEXT[errno] || errno;
    super(`${errno}: ${text}${detail ? ` (${detail})` : ''}: '${filePath}'`);
    this.errno = errno;
    this.filePath = filePath;
  }
}

/** Turn an fs error into a FileError about the path the caller named. */
function asFileError(err, named) {
  if (err instanceof FileError) return err;
  if (err && typeof err.code === 'string' && /^E[A-Z0-9]+$/.test(err.code))
    return new FileError(err.code, named);
  return err;
}

function reply(id, result, blobs) {
  send(Object.assign({ id, ok: true }, result), blobs);
}

function replyError(id, err) {
  if (err instanceof FileError) {
    send({
      id,
      ok: false,
      error: { kind: 'file', errno: err.errno, path: err.filePath, message: err.message },
    });
  } else if (err && err.kind === 'exec') {
    send({ id, ok: false, error: { kind: 'exec', errno: err.code, message: err.message } });
  } else {
    send({ id, ok: false, error: { kind: 'protocol', message: String((err && err.stack) || err) } });
  }
}

function execError(code, message) {
  const e = new Error(message);
  e.kind = 'exec';
  e.code = code;
  return e;
}

// ---------------------------------------------------------------------------------------------
// Confinement: every path is checked lexically, then again after resolving symlinks.

function inside(p, root) {
  return p === root || p.startsWith(root.endsWith('/') ? root : root + '/');
}

function insideWorkspace(p) {
  return inside(p, WORKDIR_REAL) || inside(p, WORKDIR);
}

/** The absolute path as the caller named it: absolute as given, else workdir + '/' + relative. */
function namedPath(p) {
  if (typeof p !== 'string' || p === '' || p === '.') return WORKDIR;
  return path.isAbsolute(p) ? p : `${WORKDIR}/${p}`;
}

/** Lexically normalised absolute path; EACCES when it lies outside the workspace. */
function lexical(named) {
  const lex = path.resolve(named);
  if (!inside(lex, WORKDIR)) throw new FileError('EACCES', named, 'outside the workspace');
  return lex;
}

/**
 * Real path of an existing file or directory inside the workspace. A symlink whose target lies
 * outside (existing or not) gives EACCES, so that neither content nor existence leaks.
 */
function resolveExisting(named) {
  const lex = lexical(named);
  let real;
  try {
    real = fs.realpathSync(lex);
  } catch (err) {
    if (err && (err.code === 'ENOENT' || err.code === 'ENOTDIR')) {
      const dangling = danglingTarget(lex);
      if (dangling !== undefined && !insideWorkspace(dangling)) {
        throw new FileError('EACCES', named, 'symlink points outside the workspace');
      }
    }
    throw asFileError(err, named);
  }
  if (!insideWorkspace(real)) throw new FileError('EACCES', named, 'symlink points outside the workspace');
  return real;
}

/** Where a dangling symlink at `lex` points (absolute), or undefined when `lex` is no symlink. */
function danglingTarget(lex) {
  let st;
  try {
    st = fs.lstatSync(lex);
  } catch {
    return undefined;
  }
  if (!st.isSymbolicLink()) return undefined;
  const target = fs.readlinkSync(lex);
  let dir = path.dirname(lex);
  try {
    dir = fs.realpathSync(dir);
  } catch {
    // keep the lexical parent
  }
  return path.resolve(dir, target);
}

/**
 * Real path of directory `lexDir` (inside the workspace), creating missing components when
 * `mkdirs`. Walks one component at a time so that a symlinked component pointing outside is refused
 * before anything is created through it.
 */
function ensureDir(lexDir, mkdirs, named) {
  try {
    const real = fs.realpathSync(lexDir);
    if (!insideWorkspace(real)) throw new FileError('EACCES', named, 'symlink points outside the workspace');
    if (!fs.statSync(real).isDirectory()) throw new FileError('ENOTDIR', named);
    return real;
  } catch (err) {
    if (err instanceof FileError) throw err;
    if (!err || (err.code !== 'ENOENT' && err.code !== 'ENOTDIR')) throw asFileError(err, named);
    if (err.code === 'ENOTDIR') throw new FileError('ENOTDIR', named);
  }
  if (!mkdirs) {
    const dangling = danglingTarget(lexDir);
    if (dangling !== undefined && !insideWorkspace(dangling)) {
      throw new FileError('EACCES', named, 'symlink points outside the workspace');
    }
    throw new FileError('ENOENT', named);
  }
  const rel = path.relative(WORKDIR, lexDir);
  let cur = WORKDIR_REAL;
  for (const comp of rel.split('/')) {
    if (comp === '' || comp === '.') continue;
    const next = path.join(cur, comp);
    let st;
    try {
      st = fs.lstatSync(next);
    } catch (err) {
      if (err && err.code === 'ENOENT') {
        fs.mkdirSync(next);
        cur = next;
        continue;
      }
      throw asFileError(err, named);
    }
    if (st.isSymbolicLink()) {
      let real;
      try {
        real = fs.realpathSync(next);
      } catch {
        const dangling = danglingTarget(next);
        if (dangling !== undefined && !insideWorkspace(dangling)) {
          throw new FileError('EACCES', named, 'symlink points outside the workspace');
        }
        throw new FileError('ENOENT', named);
      }
      if (!insideWorkspace(real))
        throw new FileError('EACCES', named, 'symlink points outside the workspace');
      if (!fs.statSync(real).isDirectory()) throw new FileError('ENOTDIR', named);
      cur = real;
    } else if (st.isDirectory()) {
      cur = next;
    } else {
      throw new FileError('ENOTDIR', named);
    }
  }
  return cur;
}

// ---------------------------------------------------------------------------------------------
// File operations

function readFileOp(req) {
  const named = namedPath(req.path);
  const real = resolveExisting(named);
  const st = fs.statSync(real);
  if (st.isDirectory()) throw new FileError('EISDIR', named);
  if (!st.isFile()) throw new FileError('EINVAL', named, 'not a regular file');
  // Without maxBytes, files above 512 MiB are refused too: a reply must fit the host's frame cap.
  const max = typeof req.maxBytes === 'number' ? Math.min(req.maxBytes, MAX_READ_BYTES) : MAX_READ_BYTES;
  if (st.size > max) throw new FileError('EFBIG', named, `${st.size} bytes > ${max}`);
  const fd = fs.openSync(real, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW);
  try {
    const data = fs.readFileSync(fd);
    if (data.length > max) throw new FileError('EFBIG', named, `more than ${max} bytes`);
    return { result: {}, blobs: [data] };
  } finally {
    fs.closeSync(fd);
  }
}

/** Resolve where a write to `named` lands; never through a symlink that leaves the workspace. */
function writeTarget(named, mkdirs) {
  const lex = lexical(named);
  if (lex === WORKDIR) throw new FileError('EISDIR', named);
  const parent = ensureDir(path.dirname(lex), mkdirs, named);
  const target = path.join(parent, path.basename(lex));
  let st;
  try {
    st = fs.lstatSync(target);
  } catch (err) {
    if (err && err.code === 'ENOENT') return target;
    throw asFileError(err, named);
  }
  if (st.isSymbolicLink()) {
    let real;
    try {
      real = fs.realpathSync(target);
    } catch {
      // Dangling: writing creates the target, so the target must be inside too.
      const dest = danglingTarget(target);
      if (dest === undefined || !insideWorkspace(dest)) {
        throw new FileError('EACCES', named, 'symlink points outside the workspace');
      }
      const destParent = ensureDir(path.dirname(dest), false, named);
      const finalTarget = path.join(destParent, path.basename(dest));
      try {
        if (fs.lstatSync(finalTarget).isSymbolicLink()) throw new FileError('ELOOP', named);
      } catch (err) {
        if (err instanceof FileError) throw err;
      }
      return finalTarget;
    }
    if (!insideWorkspace(real)) throw new FileError('EACCES', named, 'symlink points outside the workspace');
    const rst = fs.statSync(real);
    if (rst.isDirectory()) throw new FileError('EISDIR', named);
    if (!rst.isFile()) throw new FileError('EINVAL', named, 'not a regular file');
    return real;
  }
  if (st.isDirectory()) throw new FileError('EISDIR', named);
  if (!st.isFile()) throw new FileError('EINVAL', named, 'not a regular file');
  return target;
}

function writeAll(fd, data) {
  let off = 0;
  while (off < data.length) off += fs.writeSync(fd, data, off, data.length - off);
}

function writeFileOp(req, blobs) {
  const named = namedPath(req.path);
  const target = writeTarget(named, req.mkdirs !== false);
  const c = fs.constants;
  // Write, then cut to length: on ext4, truncating a file to zero before rewriting it forces a
  // flush at close (auto_da_alloc), which costs milliseconds per write.
  const fd = fs.openSync(target, c.O_WRONLY | c.O_CREAT | c.O_NOFOLLOW, 0o666);
  try {
    const data = blobs[0] || Buffer.alloc(0);
    writeAll(fd, data);
    fs.ftruncateSync(fd, data.length);
  } finally {
    fs.closeSync(fd);
  }
  return { result: {} };
}

function listOp(req) {
  const named = namedPath(req.path);
  const root = resolveExisting(named);
  if (!fs.statSync(root).isDirectory()) throw new FileError('ENOTDIR', named);
  const limit = typeof req.limit === 'number' && req.limit >= 0 ? req.limit : 100000;
  const files = [];
  let truncated = false;
  const stack = [[root, '']];
  outer: while (stack.length > 0) {
    const [dir, prefix] = stack.pop();
    let entries;
    try {
      entries = fs.readdirSync(dir, { withFileTypes: true });
    } catch {
      continue; // unreadable directory: skipped, like a glob would
    }
    for (const e of entries) {
      const rel = prefix === '' ? e.name : `${prefix}/${e.name}`;
      let isFile = false;
      if (e.isDirectory()) {
        if (e.name !== '.git') stack.push([path.join(dir, e.name), rel]);
      } else if (e.isFile()) {
        isFile = true;
      } else if (e.isSymbolicLink()) {
        // Only symlinks to regular files inside the workspace are listed; symlinked directories
        // are not descended (no cycles, no escape), dangling and outside links are left out.
        try {
          const real = fs.realpathSync(path.join(dir, e.name));
          isFile = insideWorkspace(real) && fs.statSync(real).isFile();
        } catch {
          isFile = false;
        }
      }
      if (isFile) {
        if (files.length >= limit) {
          truncated = true;
          break outer;
        }
        files.push(rel);
      }
    }
  }
  return { result: { files, truncated } };
}

// ---------------------------------------------------------------------------------------------
// findFiles: the files below a directory that match a path pattern, matched while walking (see
// src/sandbox/path-pattern.ts for the pattern; this is the same automaton, kept here because the
// agent is self-contained). Same entry rules as listOp; directories the pattern cannot reach are
// not read; no entry cap.

function compileFindPattern(pattern) {
  if (!Array.isArray(pattern) || pattern.length === 0)
    throw new Error('findFiles: pattern must be a non-empty array');
  return pattern.map((c) => {
    if (c && c.kind === 'any') return undefined;
    if (c && c.kind === 'literal' && typeof c.name === 'string') return (name) => name === c.name;
    if (c && c.kind === 'regex' && typeof c.source === 'string') {
      const re = new RegExp(c.source, 'su');
      const hidden = c.hidden === true;
      return (name) => (hidden || name[0] !== '.') && re.test(name);
    }
    throw new Error('findFiles: invalid pattern component');
  });
}

function findClosure(tests, states) {
  const out = [];
  const stack = states.slice();
  while (stack.length > 0) {
    const i = stack.pop();
    if (i >= tests.length || out.includes(i)) continue;
    out.push(i);
    if (tests[i] === undefined) stack.push(i + 1);
  }
  return out;
}

function findEnter(tests, states, name) {
  const last = tests.length - 1;
  const next = [];
  for (const i of states) {
    const test = tests[i];
    if (test === undefined) {
      if (name[0] !== '.') next.push(i);
    } else if (i < last && test(name)) {
      next.push(i + 1);
    }
  }
  return findClosure(tests, next);
}

function findFileMatches(tests, states, name) {
  const last = tests.length - 1;
  for (const i of states) {
    if (i !== last) continue;
    const test = tests[i];
    if (test === undefined ? name[0] !== '.' : test(name)) return true;
  }
  return false;
}

/**
 * Filesystems whose directory link count is 2 + the number of subdirectories (ext2/3/4, XFS,
 * tmpfs), so a count of 2 proves a directory has none (find's "leaf optimisation"). Others (btrfs,
 * overlayfs, network filesystems) are always read whole.
 */
const LEAF_COUNT_FILESYSTEMS = new Set([0xef53, 0x58465342, 0x01021994]);

function trustsLinkCount(root) {
  try {
    return typeof fs.statfsSync === 'function' && LEAF_COUNT_FILESYSTEMS.has(fs.statfsSync(root).type);
  } catch {
    return false;
  }
}

/** Whether the entry at `p` is listed as a file (a regular file, or a symlink to one inside). */
function listedAsFile(p, st) {
  if (st.isFile()) return true;
  if (!st.isSymbolicLink()) return false;
  try {
    const real = fs.realpathSync(p);
    return insideWorkspace(real) && fs.statSync(real).isFile();
  } catch {
    return false;
  }
}

/** The file names a directory in `states` can match when all are literal, else undefined. */
function literalFileNames(tests, literals, states) {
  const last = tests.length - 1;
  const names = [];
  for (const i of states) {
    if (i !== last) continue;
    const name = literals[i];
    if (name === undefined) return undefined;
    names.push(name);
  }
  return names;
}

/**
 * The matching files of one directory whose subdirectories need not be read: literal names are
 * looked up directly, otherwise the names are read without types and only matches are examined.
 */
function filesOnly(dir, prefix, tests, literals, states, files) {
  const rel = (name) => (prefix === '' ? name : `${prefix}/${name}`);
  const direct = literalFileNames(tests, literals, states);
  const names = direct !== undefined ? [...new Set(direct)] : fs.readdirSync(dir);
  for (const name of names) {
    if (direct === undefined && !findFileMatches(tests, states, name)) continue;
    const p = path.join(dir, name);
    let st;
    try {
      st = fs.lstatSync(p);
    } catch {
      continue;
    }
    if (listedAsFile(p, st)) files.push(rel(name));
  }
}

function findFilesOp(req) {
  const named = namedPath(req.path);
  const root = resolveExisting(named);
  if (!fs.statSync(root).isDirectory()) throw new FileError('ENOTDIR', named);
  const tests = compileFindPattern(req.pattern);
  // Literal names usable as direct lookups (never '.', '..' or anything with a '/' or NUL).
  const literals = req.pattern.map((c) =>
    c.kind === 'literal' && c.name !== '.' && c.name !== '..' && !/[/\0]/.test(c.name) ? c.name : undefined,
  );
  const leafCounts = trustsLinkCount(root);
  const last = tests.length - 1;
  const files = [];
  const stack = [[root, '', findClosure(tests, [0])]];
  while (stack.length > 0) {
    const [dir, prefix, states] = stack.pop();
    try {
      const descends = states.some((i) => tests[i] === undefined || i < last);
      if (!descends || (leafCounts && fs.lstatSync(dir).nlink === 2)) {
        filesOnly(dir, prefix, tests, literals, states, files);
        continue;
      }
      for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
        const rel = prefix === '' ? e.name : `${prefix}/${e.name}`;
        if (e.isDirectory()) {
          if (e.name === '.git') continue;
          const next = findEnter(tests, states, e.name);
          if (next.length > 0) stack.push([path.join(dir, e.name), rel, next]);
        } else if (findFileMatches(tests, states, e.name)) {
          if (e.isFile() || (e.isSymbolicLink() && listedAsFile(path.join(dir, e.name), e))) files.push(rel);
        }
      }
    } catch {
      continue; // unreadable directory: skipped, like a glob would
    }
  }
  return { result: { files } };
}

/** Relative tar entry path → named absolute path; refuses absolute paths and `..`. */
function entryNamed(p) {
  if (
    typeof p !== 'string' ||
    p === '' ||
    path.isAbsolute(p) ||
    p.split('/').includes('..') ||
    p.includes('\0')
  ) {
    throw new FileError('EACCES', String(p), 'invalid archive entry path');
  }
  return `${WORKDIR}/${p}`;
}

/** Remove a non-directory at `target` (tar semantics: an entry replaces what was there). */
function clearSlot(target, named) {
  let st;
  try {
    st = fs.lstatSync(target);
  } catch {
    return;
  }
  if (st.isDirectory()) throw new FileError('EISDIR', named);
  fs.unlinkSync(target);
}

function putOp(req, blobs) {
  const named = entryNamed(req.path);
  const lex = lexical(named);
  const mode = (typeof req.mode === 'number' ? req.mode : 0o644) & 0o1777; // no setuid/setgid
  if (req.kind === 'dir') {
    ensureDir(lex, true, named);
    return { result: {} };
  }
  const parent = ensureDir(path.dirname(lex), true, named);
  const target = path.join(parent, path.basename(lex));
  if (target === WORKDIR_REAL) throw new FileError('EISDIR', named);
  clearSlot(target, named);
  const c = fs.constants;
  if (req.kind === 'file') {
    const fd = fs.openSync(target, c.O_WRONLY | c.O_CREAT | c.O_EXCL | c.O_NOFOLLOW, 0o600);
    try {
      writeAll(fd, blobs[0] || Buffer.alloc(0));
      fs.fchmodSync(fd, mode);
    } finally {
      fs.closeSync(fd);
    }
  } else if (req.kind === 'symlink') {
    fs.symlinkSync(String(req.linkname), target);
  } else if (req.kind === 'link') {
    const source = resolveExisting(entryNamed(req.linkname));
    if (!fs.statSync(source).isFile()) throw new FileError('EINVAL', named, 'hard link to a non-file');
    fs.linkSync(source, target);
  } else {
    throw new FileError('EINVAL', named, `unsupported entry kind ${String(req.kind)}`);
  }
  return { result: {} };
}

function chmodOp(req) {
  const named = namedPath(req.path);
  const real = resolveExisting(named);
  fs.chmodSync(real, (typeof req.mode === 'number' ? req.mode : 0o755) & 0o1777);
  return { result: {} };
}

// ---------------------------------------------------------------------------------------------
// Commands

const running = new Map(); // request id -> { kill(reason) }

/** Script sourced by every command's bash through BASH_ENV: sets the rlimits, then unsets itself. */
const LIMITS_FILE = typeof config.limitsFile === 'string' ? config.limitsFile : undefined;
/** sandbox-exec: every command starts through it (see the top of this file). */
const LAUNCHER = typeof config.launcher === 'string' ? config.launcher : undefined;
/** TESTING ONLY: commands get the channel as fd 3 (hostile-frame tests); never set in production. */
const EXPOSE_CHANNEL = config.exposeChannel === true;

function isExecutable(p) {
  try {
    fs.accessSync(p, fs.constants.X_OK);
    return fs.statSync(p).isFile();
  } catch {
    return false;
  }
}

function findExecutable(name, envPath, cwd) {
  if (name.includes('/')) return isExecutable(path.resolve(cwd, name));
  for (const dir of String(envPath || '').split(':')) {
    if (dir !== '' && isExecutable(path.join(dir, name))) return true;
  }
  return false;
}

/** All processes whose parent chain, process group or session leads to `rootPid` (via /proc). */
function descendants(rootPid) {
  const parent = new Map();
  const found = new Set();
  let names;
  try {
    names = fs.readdirSync('/proc');
  } catch {
    return [];
  }
  for (const n of names) {
    if (!/^\d+$/.test(n)) continue;
    let stat;
    try {
      stat = fs.readFileSync(`/proc/${n}/stat`, 'utf8');
    } catch {
      continue;
    }
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const pid = Number(n);
    const ppid = Number(fields[1]);
    parent.set(pid, ppid);
    if (Number(fields[2]) === rootPid || Number(fields[3]) === rootPid) found.add(pid);
  }
  for (const pid of parent.keys()) {
    let p = pid;
    for (let depth = 0; depth < 512 && p > 1; depth++) {
      if (p === rootPid || found.has(p)) {
        found.add(pid);
        break;
      }
      p = parent.get(p) || 0;
    }
  }
  found.delete(process.pid);
  return [...found];
}

/**
 * Kill everything a command started. `rootPid` is sandbox-exec, which reaps and kills what is
 * left of the command once the command itself died (and, in a pid namespace of its own, takes the
 * whole namespace with it), then exits like the command: so the command's processes are killed
 * first and the launcher a moment later only if it is still there.
 */
function killTree(rootPid) {
  for (let round = 0; round < 3; round++) {
    const victims = descendants(rootPid).filter((pid) => pid !== rootPid);
    for (const pid of victims) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    if (victims.length === 0) break;
  }
  setTimeout(() => {
    for (const target of [-rootPid, rootPid]) {
      try {
        process.kill(target, 'SIGKILL');
      } catch {
        // already gone
      }
    }
  }, LAUNCHER_GRACE_MS).unref();
}

function collector(max) {
  const parts = [];
  let kept = 0;
  let truncated = false;
  return {
    push(chunk) {
      if (kept >= max) {
        if (chunk.length > 0) truncated = true;
        return;
      }
      const take = Math.min(chunk.length, max - kept);
      parts.push(take === chunk.length ? chunk : chunk.subarray(0, take));
      kept += take;
      if (take < chunk.length) truncated = true;
    },
    get truncated() {
      return truncated;
    },
    buffer() {
      return Buffer.concat(parts, kept);
    },
  };
}

function execOp(id, req, blobs) {
  const env = Object.assign({}, BASE_ENV, req.env || {});
  const cwd = typeof req.cwd === 'string' && req.cwd !== '' ? path.resolve(WORKDIR, req.cwd) : WORKDIR;
  try {
    if (!fs.statSync(cwd).isDirectory()) throw new Error('not a directory');
  } catch {
    throw execError('ENOENT', `working directory does not exist or is not a directory: ${cwd}`);
  }
  // Limits are applied by the command's own bash: a non-interactive bash sources $BASH_ENV before
  // running its command string, so a script costs one bash start and keeps exactly the `$0`, line
  // numbers and messages of a plain `bash -c`. An argv command is exec'd by that bash.
  if (LIMITS_FILE) env.BASH_ENV = LIMITS_FILE;
  let args;
  if (typeof req.script === 'string') {
    args = ['-c', req.script];
  } else if (Array.isArray(req.argv) && req.argv.length > 0) {
    const argv = req.argv.map(String);
    if (!findExecutable(argv[0], env.PATH, cwd)) {
      throw execError('ENOENT', `command not found or not executable: ${argv[0]}`);
    }
    args = ['-c', 'exec "$@"', 'bash', ...argv];
  } else {
    throw execError('EINVAL', 'exec needs argv or script');
  }
  const max =
    typeof req.maxOutputBytes === 'number' && req.maxOutputBytes >= 0
      ? req.maxOutputBytes
      : DEFAULT_MAX_OUTPUT;
  const out = collector(max);
  const err = collector(max);
  const started = Date.now();
  const hasStdin = req.stdin === true;
  let child;
  try {
    const stdio = [hasStdin ? 'pipe' : 'ignore', 'pipe', 'pipe'];
    // Own session and process group, so a kill reaches everything it started; the launcher adds a
    // pid namespace, whose end kills every process in it.
    const options = { argv0: 'bash', cwd, env, detached: true, stdio };
    if (EXPOSE_CHANNEL) {
      // What the command writes on its fd 3 goes onto the channel unchanged, as if it held it.
      stdio.push('pipe');
      child = spawn('/bin/bash', args, options);
      child.stdio[3].on('data', (chunk) => channel.write(chunk));
      child.stdio[3].on('error', () => undefined);
    } else if (LAUNCHER) {
      child = spawn(LAUNCHER, ['/bin/bash', 'bash', ...args], options);
    } else {
      throw execError('ENOEXEC', 'no sandbox-exec launcher configured');
    }
  } catch (e) {
    throw execError((e && e.code) || 'ESPAWN', `cannot start command: ${String(e && e.message)}`);
  }
  let timedOut = false;
  let killed = false;
  let finished = false;
  let timer;
  let graceTimer;
  const kill = () => {
    if (killed || finished || child.pid === undefined) return;
    killed = true;
    killTree(child.pid);
    graceTimer = setTimeout(() => {
      // Something outside the group still holds the pipes open: stop waiting for them.
      child.stdout.destroy();
      child.stderr.destroy();
    }, KILL_GRACE_MS);
  };
  running.set(id, { kill });
  if (typeof req.timeoutMs === 'number' && req.timeoutMs >= 0) {
    timer = setTimeout(() => {
      timedOut = true;
      kill();
    }, req.timeoutMs);
  }
  child.stdout.on('data', (c) => out.push(c));
  child.stderr.on('data', (c) => err.push(c));
  if (hasStdin) {
    child.stdin.on('error', () => {
      // EPIPE when the command does not read its input: not an error of the call.
    });
    child.stdin.end(blobs[0] || Buffer.alloc(0));
  }
  child.on('error', (e) => {
    if (finished) return;
    finished = true;
    clearTimeout(timer);
    clearTimeout(graceTimer);
    running.delete(id);
    replyError(id, execError((e && e.code) || 'ESPAWN', `cannot start command: ${String(e && e.message)}`));
  });
  child.on('close', (code, signal) => {
    if (finished) return;
    finished = true;
    clearTimeout(timer);
    clearTimeout(graceTimer);
    running.delete(id);
    reply(
      id,
      {
        exitCode: signal ? null : code,
        signal: signal || null,
        timedOut,
        truncated: out.truncated || err.truncated,
        durationMs: Date.now() - started,
      },
      [out.buffer(), err.buffer()],
    );
  });
}

// ---------------------------------------------------------------------------------------------
// Dispatch

const SYNC_OPS = {
  readFile: readFileOp,
  writeFile: writeFileOp,
  list: listOp,
  findFiles: findFilesOp,
  put: putOp,
  chmod: chmodOp,
};

function dispatch(req, blobs) {
  const id = req.id;
  if (typeof req.nonce === 'string') nonces.set(id, req.nonce);
  try {
    if (req.op === 'exec') {
      execOp(id, req, blobs);
    } else if (req.op === 'kill') {
      const r = running.get(req.target);
      if (r) r.kill();
      reply(id, {});
    } else if (req.op === 'ping') {
      reply(id, {});
    } else if (Object.prototype.hasOwnProperty.call(SYNC_OPS, req.op)) {
      const { result, blobs: outBlobs } = SYNC_OPS[req.op](req, blobs);
      reply(id, result, outBlobs);
    } else {
      throw new Error(`unknown op ${String(req.op)}`);
    }
  } catch (err) {
    if (req.op === 'exec' || req.op === 'kill' || req.op === 'ping') {
      replyError(id, err);
    } else {
      const named = req.op === 'put' ? `${WORKDIR}/${req.path}` : namedPath(req.path);
      replyError(id, asFileError(err, named));
    }
  }
}

channel.on('data', onData);
// The host closed the channel (destroy, or the worker died): end the sandbox with us.
channel.on('end', () => process.exit(0));
channel.on('error', () => process.exit(0));
send({ id: 0, event: 'ready', pid: process.pid });
