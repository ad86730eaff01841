import { randomBytes } from 'node:crypto';

/**
 * POSIX `sh` scripts the Kubernetes driver runs inside the sandbox pod through exec. They need only
 * `/bin/sh`, coreutils, util-linux `setsid`, findutils `find` and `tar` in the image
 * (deploy/docker/sandbox.Dockerfile), and nothing of the worker's environment.
 *
 * Every exec goes through {@link EXEC_WRAPPER}, which makes the result independent of the exec
 * WebSocket's own life: the command runs in a new session (its own process group) with a watchdog
 * that kills the whole group on timeout, so a closed socket or a dead worker does not leave the
 * deadline unenforced.
 *
 * Nothing the command prints is parsed (issue 9: a command that printed the old end-of-output
 * trailer, whose nonce it could read from its parent's command line, could change the recorded
 * result). The exit code comes only from the exec status channel (channel 3, written by the
 * kubelet from the wrapper's exit status); the one line the driver reads from stdout is a preamble
 * the wrapper prints *before* the command exists, so the command cannot forge or precede it.
 * Output cut short shows as a socket closed without a status.
 */

/** Directory inside the pod for the wrapper's per-call files (pid, stdin, flags). */
export const EXEC_STATE_DIR = '/tmp/.frognano-exec';

/**
 * The exec wrapper. Positional parameters:
 *
 * 1. nonce (hex): names the per-call files and the trailers;
 * 2. timeout in milliseconds (`0`: none);
 * 3. bytes of command script that precede stdin on the exec stdin (`0`: the command is in argv);
 * 4. bytes of stdin that follow (`0`: stdin is `/dev/null`);
 * 5. stdin mode: `file` (stdin is read whole into a file first, then given to the command) or
 *    `pipe` (the command reads exactly that many bytes from the exec stdin itself);
 * 6. working directory;
 * 7. CPU seconds for `ulimit -t` (`0`: none);
 * 8. the program the command runs (checked to exist and be executable, relative to the working
 *    directory when it has a `/`, else on PATH), so that "cannot start" is told apart from exit 127;
 * 9. and after: the command (`env -i NAME=value… program args…`). With a script on stdin, the
 *    script file's path is appended as the last argument.
 *
 * Output: first the preamble `<nonce> <state>\n` on stdout, where `state` is `start` (the command
 * runs next), `cwd` (no such working directory), `nostart` (no such program) or `stdin` (stdin
 * arrived short); then the command's stdout and stderr, unchanged. The wrapper exits with the
 * command's status (125/127 when it did not start), which the kubelet reports on channel 3.
 */
export const EXEC_WRAPPER = `
n=$1; t=$2; sb=$3; ib=$4; im=$5; cwd=$6; cpu=$7; prog=$8; shift 8
d=${EXEC_STATE_DIR}; f="$d/$n"
umask 077; mkdir -p "$d" 2>/dev/null
fin() { rm -f "$f.in" "$f.cmd" "$f.pid" "$f.timeout" "$f.killed"; exit "$1"; }
pre() { printf '%s %s\\n' "$n" "$1"; }
if [ "$sb" -gt 0 ]; then
  head -c "$sb" > "$f.cmd"; [ "$(( $(wc -c < "$f.cmd") ))" -eq "$sb" ] || { pre stdin; fin 125; }
  set -- "$@" "$f.cmd"
fi
if [ "$ib" -gt 0 ] && [ "$im" = file ]; then
  head -c "$ib" > "$f.in"; [ "$(( $(wc -c < "$f.in") ))" -eq "$ib" ] || { pre stdin; fin 125; }
  exec 0< "$f.in"
elif [ "$ib" -eq 0 ]; then
  exec 0< /dev/null
fi
umask 022
cd -- "$cwd" 2>/dev/null || { pre cwd; fin 125; }
case $prog in
  */*) [ -f "$prog" ] && [ -x "$prog" ] ;;
  *) command -v -- "$prog" > /dev/null 2>&1 ;;
esac || { pre nostart; fin 127; }
pre start
[ "$cpu" -gt 0 ] && ulimit -t "$cpu"
# An asynchronous command's stdin is /dev/null unless redirected explicitly (POSIX), hence fd 3.
exec 3<&0
setsid sh -c 'echo $$ > "$0"; exec "$@"' "$f.pid" "$@" 0<&3 3<&- &
p=$!
exec 3<&-
w=
if [ "$t" -gt 0 ]; then
  (
    sleep "$(( t / 1000 )).$(printf '%03d' $(( t % 1000 )))" & s=$!
    trap 'kill $s 2>/dev/null; exit 0' TERM
    wait $s || exit 0
    : > "$f.timeout"
    kill -KILL -$p 2>/dev/null || kill -KILL $p 2>/dev/null
  ) < /dev/null > /dev/null 2>&1 &
  w=$!
fi
wait $p 2>/dev/null; c=$?
kill -KILL -$p 2>/dev/null
if [ -n "$w" ]; then kill -TERM $w 2>/dev/null; wait $w 2>/dev/null; fi
fin "$c"
`;

/**
 * Kill the process group of the call `nonce` (abort): marks the call and sends SIGKILL to its
 * group. Positional parameter 1: the nonce.
 */
export const KILL_SCRIPT = `
f=${EXEC_STATE_DIR}/$1
[ -s "$f.pid" ] || exit 0
: > "$f.killed"
p=$(cat "$f.pid")
kill -KILL -$p 2>/dev/null || kill -KILL $p 2>/dev/null
exit 0
`;

/** Exit status of the file scripts when they refuse: the errno name is the last line of stderr. */
export const FILE_ERROR_EXIT = 3;

/**
 * Shared prologue of the file scripts: `$1` workdir, `$2` absolute path. Resolves the path with
 * every symlink followed (`realpath -m`) and refuses one that lands outside the workspace.
 */
const RESOLVE = `
wd=$1; p=$2
err() { printf '%s\\n' "$1" >&2; exit ${FILE_ERROR_EXIT}; }
r=$(realpath -m -- "$p") || err EINVAL
case "$r/" in "$wd"/*) ;; *) err EACCES ;; esac
missing() { q=$(dirname -- "$1"); while [ ! -e "$q" ]; do q=$(dirname -- "$q"); done; [ -d "$q" ] && err ENOENT; err ENOTDIR; }
`;

/** Read a file: `$3` max bytes. Stdout: the bytes. */
export const READ_FILE_SCRIPT = `${RESOLVE}
[ -e "$r" ] || missing "$r"
[ -d "$r" ] && err EISDIR
[ -r "$r" ] || err EACCES
[ "$(stat -c %s -- "$r")" -gt "$3" ] && err EFBIG
exec cat -- "$r"
`;

/** Write a file from stdin: `$3` is `1` to create missing parent directories. */
export const WRITE_FILE_SCRIPT = `${RESOLVE}
[ -d "$r" ] && err EISDIR
parent=$(dirname -- "$r")
if [ ! -d "$parent" ]; then
  if [ "$3" = 1 ]; then
    [ -e "$parent" ] && err ENOTDIR
    mkdir -p -- "$parent" 2>/dev/null || err ENOTDIR
  else
    missing "$r"
  fi
fi
cat > "$r" || err EACCES
`;

/**
 * List regular files, and symlinks to regular files inside the workspace, below a directory;
 * `.git` directories skipped; symlinked directories not followed.
 * `$3`: the most entries to print. Stdout: NUL-separated paths starting with `./`.
 */
export const LIST_SCRIPT = `${RESOLVE}
[ -e "$r" ] || missing "$r"
[ -d "$r" ] || err ENOTDIR
cd -- "$r" || err EACCES
find . \\( -name .git -type d \\) -prune -o -type f -print0 -o -type l -xtype f -exec sh -c '
  for l; do r=$(realpath -e -- "$l") && case "$r/" in "$0"/*) printf "%s\\0" "$l" ;; esac; done' "$wd" {} + 2>/dev/null |
  head -z -n "$3"
exit 0
`;

/**
 * {@link LIST_SCRIPT} without an entry cap, for `findFiles`: `$3` is the deepest level to descend
 * (`0`: no bound). Stdout: NUL-separated paths starting with `./`.
 */
export const FIND_FILES_SCRIPT = `${RESOLVE}
[ -e "$r" ] || missing "$r"
[ -d "$r" ] || err ENOTDIR
cd -- "$r" || err EACCES
depth=; [ "$3" -gt 0 ] && depth="-maxdepth $3"
find . $depth \\( -name .git -type d \\) -prune -o -type f -print0 -o -type l -xtype f -exec sh -c '
  for l; do r=$(realpath -e -- "$l") && case "$r/" in "$0"/*) printf "%s\\0" "$l" ;; esac; done' "$wd" {} + 2>/dev/null
exit 0
`;

/**
 * Extract a tar from the exec stdin into the workspace while counting and hashing it, then check
 * both. `$1` workdir, `$2` size in bytes, `$3` sha256 (hex). On a mismatch or a tar error the
 * workspace is emptied (a partial copy must not look like a repository) and the script exits 4
 * with the reason on stderr.
 */
export const COPY_IN_SCRIPT = `
wd=$1; size=$2; want=$3
t=$(mktemp -d "\${TMPDIR:-/tmp}/.frognano-copy.XXXXXX") || exit 5
mkfifo "$t/h" "$t/c" || exit 5
sha256sum < "$t/h" > "$t/sum" & hp=$!
wc -c < "$t/c" > "$t/size" & cp=$!
head -c "$size" | tee "$t/h" "$t/c" | { tar -x -f - -C "$wd" --no-same-owner 2> "$t/tar-err"; x=$?; cat > /dev/null; exit $x; }
x=$?
wait $hp; wait $cp
got=$(( $(cat "$t/size") )); sum=$(cut -d' ' -f1 < "$t/sum")
why=
if [ "$got" -ne "$size" ]; then why="size mismatch: expected $size bytes, received $got"
elif [ "$sum" != "$want" ]; then why="sha256 mismatch: expected $want, received $sum"
elif [ "$x" -ne 0 ]; then why="tar failed: $(head -c 2000 "$t/tar-err")"
fi
rm -rf "$t"
if [ -n "$why" ]; then
  find "$wd" -mindepth 1 -delete 2>/dev/null
  printf '%s\\n' "$why" >&2
  exit 4
fi
exit 0
`;

/** A fresh nonce for one exec call (hex, 24 characters). */
export function newNonce(): string {
  return randomBytes(12).toString('hex');
}

/** Names allowed for environment variables passed to commands. */
export const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
