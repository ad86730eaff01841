/*
 * sandbox-exec: starts one command of the local sandbox driver, out of reach of the in-sandbox agent.
 *
 *   sandbox-exec PATH ARGV0 [ARG...]     (run by sandbox-agent.cjs: execv(PATH, [ARGV0, ARG...]))
 *   sandbox-exec --check                 (prints "ok" when it can do all of the below; for doctor)
 *
 * Why it exists (issue 9): the agent and the commands it starts share a uid, so without this a
 * command could open /proc/<agent>/fd/1, pidfd_getfd() or ptrace() the agent and write forged
 * frames to the worker. Seccomp alone cannot stop opens of /proc/<pid>/{fd,mem}; the agent has to
 * be invisible to the command. So, per command:
 *
 *   P (this process, in the agent's pid namespace; needs CAP_SYS_ADMIN in the sandbox's user
 *     namespace, which bwrap gives the agent with --cap-add):
 *     unshare(CLONE_NEWPID | CLONE_NEWNS), fork C, wait for C's report, exit like the command.
 *   C (pid 1 of the new pid namespace): die with P (PDEATHSIG), make mounts private, mount a fresh
 *     /proc (the agent's pid does not exist in it), become non-dumpable, fork G, reap every orphan,
 *     report G's wait status to P through a pipe, exit. When C exits the kernel kills everything
 *     left in the namespace, so a `setsid` double fork cannot outlive its command.
 *   G (pid 2): own session, all capabilities dropped (effective, permitted, inheritable, ambient,
 *     bounding set), no_new_privs, the seccomp filter below, then execv(PATH).
 *
 * G cannot reach C's pipe either: C keeps CAP_SYS_ADMIN (which G lacks) and is non-dumpable, so
 * /proc/1/fd and /proc/1/mem are closed to G, and ptrace is denied by the filter.
 *
 * The filter is built with libseccomp (Debian libseccomp-dev) at build time: scripts/build-native.mjs
 * compiles this file once with -DFILTER_GENERATOR, runs it to export the filter as BPF
 * (seccomp_export_bpf), and compiles it again with that program included (native/build/filter.h),
 * so a command does not pay for building the filter (about 2 ms of CPU) and the launcher needs no
 * library at run time. Default allow; EPERM to:
 * ptrace, process_vm_readv/writev, pidfd_open, pidfd_getfd, pidfd_send_signal, kcmp, setns,
 * unshare, clone with CLONE_NEWUSER, mount and the new mount API, umount2, pivot_root, chroot,
 * keyctl, add_key, request_key, bpf, perf_event_open, userfaultfd, io_uring (whose operations
 * seccomp cannot see), kexec and module loading, open_by_handle_at; chmod/fchmod/fchmodat and
 * open/openat/creat/mkdir/mkdirat whose mode has S_ISUID or S_ISGID (nothing setuid/setgid comes
 * out onto the host); mknod/mknodat of anything but a regular file (no device nodes, no FIFOs).
 * clone3, openat2 and fchmodat2 answer ENOSYS: their arguments live in memory seccomp cannot read,
 * and the C library falls back to clone/openat/fchmodat, which are filtered. Syscalls of a foreign
 * architecture (int 0x80 on x86_64) kill the process (libseccomp's default for a bad arch).
 *
 * Exit status: the command's; when a signal ended it, P kills itself with that signal so the agent
 * sees it. 126: the launcher itself failed (message on stderr, prefixed "sandbox-exec:"); 127: the
 * program could not be executed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <poll.h>
#include <sched.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#ifdef FILTER_GENERATOR
#include <seccomp.h>
#else
#include "filter.h" /* generated: static const unsigned char FILTER_BPF[] */
#endif
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef CLONE_NEWUSER
#define CLONE_NEWUSER 0x10000000
#endif

static void die(const char *what) {
  fprintf(stderr, "sandbox-exec: %s: %s\n", what, strerror(errno));
  _exit(126);
}

#ifdef FILTER_GENERATOR
/* Add "deny with `err` when the syscall exists"; a syscall this libseccomp does not know is skipped. */
static int deny(scmp_filter_ctx ctx, int err, const char *name, unsigned n, struct scmp_arg_cmp *cmp) {
  int nr = seccomp_syscall_resolve_name(name);
  if (nr == __NR_SCMP_ERROR) return 0;
  return seccomp_rule_add_array(ctx, SCMP_ACT_ERRNO(err), nr, n, cmp);
}

/* Deny `name` when its mode argument `arg` has a setuid or setgid bit. */
static int deny_setid_mode(scmp_filter_ctx ctx, const char *name, unsigned arg) {
  struct scmp_arg_cmp uid = SCMP_CMP(arg, SCMP_CMP_MASKED_EQ, S_ISUID, S_ISUID);
  struct scmp_arg_cmp gid = SCMP_CMP(arg, SCMP_CMP_MASKED_EQ, S_ISGID, S_ISGID);
  int rc = deny(ctx, EPERM, name, 1, &uid);
  return rc ? rc : deny(ctx, EPERM, name, 1, &gid);
}

/* Deny mknod/mknodat (mode argument `arg`) for every file type but regular files. */
static int deny_special_nodes(scmp_filter_ctx ctx, const char *name, unsigned arg) {
  const unsigned long types[] = {S_IFCHR, S_IFBLK, S_IFIFO, S_IFSOCK, S_IFDIR, S_IFLNK};
  for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
    struct scmp_arg_cmp c = SCMP_CMP(arg, SCMP_CMP_MASKED_EQ, S_IFMT, types[i]);
    int rc = deny(ctx, EPERM, name, 1, &c);
    if (rc) return rc;
  }
  return 0;
}

static scmp_filter_ctx build_filter(void) {
  scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
  if (ctx == NULL) return NULL;
  static const char *const denied[] = {
      "ptrace", "process_vm_readv", "process_vm_writev", "pidfd_open", "pidfd_getfd",
      "pidfd_send_signal", "kcmp", "setns", "unshare", "mount", "umount2", "pivot_root", "chroot",
      "move_mount", "open_tree", "fsopen", "fsmount", "fsconfig", "fspick", "mount_setattr",
      "keyctl", "add_key", "request_key", "bpf", "perf_event_open", "userfaultfd",
      "io_uring_setup", "io_uring_enter", "io_uring_register", "kexec_load", "kexec_file_load",
      "init_module", "finit_module", "delete_module", "open_by_handle_at", "name_to_handle_at",
  };
  int rc = 0;
  for (size_t i = 0; i < sizeof denied / sizeof denied[0] && rc == 0; i++)
    rc = deny(ctx, EPERM, denied[i], 0, NULL);
  struct scmp_arg_cmp newuser = SCMP_CMP(0, SCMP_CMP_MASKED_EQ, CLONE_NEWUSER, CLONE_NEWUSER);
  if (rc == 0) rc = deny(ctx, EPERM, "clone", 1, &newuser);
  static const char *const opaque[] = {"clone3", "openat2", "fchmodat2"};
  for (size_t i = 0; i < sizeof opaque / sizeof opaque[0] && rc == 0; i++)
    rc = deny(ctx, ENOSYS, opaque[i], 0, NULL);
#if defined(__x86_64__) || defined(__aarch64__)
  /* fchmodat2 is syscall 452 on every architecture since Linux 6.6; libseccomp 2.5 may not know it. */
  if (rc == 0 && seccomp_syscall_resolve_name("fchmodat2") == __NR_SCMP_ERROR)
    rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), 452, 0);
#endif
  if (rc == 0) rc = deny_setid_mode(ctx, "chmod", 1);
  if (rc == 0) rc = deny_setid_mode(ctx, "fchmod", 1);
  if (rc == 0) rc = deny_setid_mode(ctx, "fchmodat", 2);
  if (rc == 0) rc = deny_setid_mode(ctx, "creat", 1);
  if (rc == 0) rc = deny_setid_mode(ctx, "mkdir", 1);
  if (rc == 0) rc = deny_setid_mode(ctx, "mkdirat", 2);
  /* open/openat: the mode only matters with O_CREAT or O_TMPFILE, but a setuid mode is never needed. */
  if (rc == 0) rc = deny_setid_mode(ctx, "open", 2);
  if (rc == 0) rc = deny_setid_mode(ctx, "openat", 3);
  if (rc == 0) rc = deny_special_nodes(ctx, "mknod", 1);
  if (rc == 0) rc = deny_special_nodes(ctx, "mknodat", 2);
  if (rc != 0) {
    errno = -rc;
    seccomp_release(ctx);
    return NULL;
  }
  return ctx;
}

/* The generator: write the filter as BPF (struct sock_filter[]) to stdout. */
int main(void) {
  scmp_filter_ctx ctx = build_filter();
  if (ctx == NULL) die("building the seccomp filter");
  int rc = seccomp_export_bpf(ctx, 1);
  if (rc != 0) {
    errno = -rc;
    die("exporting the seccomp filter");
  }
  return 0;
}
#else

/* The filter built at build time (see the top of this file). */
static struct sock_fprog filter_program(void) {
  struct sock_fprog prog = {(unsigned short)(sizeof FILTER_BPF / sizeof(struct sock_filter)),
                            (struct sock_filter *)FILTER_BPF};
  return prog;
}

/* Drop every capability of this process for good: bounding set, ambient, then the three sets. */
static void drop_capabilities(void) {
  for (int cap = 0; cap <= 63; cap++) {
    if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 && errno != EINVAL) die("dropping the bounding set");
  }
  if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0) die("clearing ambient capabilities");
  struct __user_cap_header_struct header = {_LINUX_CAPABILITY_VERSION_3, 0};
  struct __user_cap_data_struct data[2];
  memset(data, 0, sizeof data);
  if (syscall(SYS_capset, &header, data) != 0) die("dropping capabilities");
}

/* G: the command itself. Never returns. */
static void run_command(char **command, const struct sock_fprog *filter) {
  if (getsid(0) != getpid() && setsid() < 0) die("setsid");
  drop_capabilities();
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) die("no_new_privs");
  if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, filter, 0, 0) != 0) die("loading the seccomp filter");
  execv(command[0], command + 1);
  fprintf(stderr, "sandbox-exec: cannot execute %s: %s\n", command[0], strerror(errno));
  _exit(127);
}

/*
 * True when this mount namespace's /proc has nothing mounted below it. The kernel lets a user
 * namespace mount a fresh proc only while a fully visible one is mounted (fs/namespace.c,
 * mnt_already_visible); bubblewrap started by host root puts read-only mounts over /proc/bus and
 * /proc/irq (they are writable for root), and those cannot be removed here, so then there is no
 * private /proc and no pid namespace: the command runs in the agent's pid namespace, where the
 * agent is still closed to it (see the top of this file).
 */
static int proc_is_plain(void) {
  FILE *f = fopen("/proc/self/mountinfo", "re");
  if (f == NULL) return 0;
  char line[4096];
  int plain = 1;
  while (fgets(line, sizeof line, f) != NULL) {
    char point[4096];
    /* id parent major:minor root mount-point ... (proc(5)) */
    if (sscanf(line, "%*s %*s %*s %*s %4095s", point) == 1 && strncmp(point, "/proc/", 6) == 0) plain = 0;
  }
  fclose(f);
  return plain;
}

/* C: pid 1 of the command's pid namespace. Never returns. */
static void run_init(char **argv, const struct sock_fprog *filter, int report_fd, int alive_fd) {
  /* getppid() is 0 here (P lives outside this pid namespace): P's end of `alive` tells if it died
   * before PDEATHSIG was armed. */
  if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0) _exit(126);
  struct pollfd pfd = {alive_fd, POLLIN, 0};
  if (poll(&pfd, 1, 0) != 0) _exit(126);
  close(alive_fd);
  if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) die("making mounts private");
  if (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) != 0) die("mounting /proc");
  if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) die("non-dumpable");
  pid_t child = fork();
  if (child < 0) die("fork");
  if (child == 0) {
    close(report_fd);
    run_command(argv, filter);
  }
  /* Hold no end of the command's pipes: only the command decides when its output ends. */
  int null = open("/dev/null", O_RDWR | O_CLOEXEC);
  if (null >= 0) {
    dup2(null, 0);
    dup2(null, 1);
    dup2(null, 2);
  }
  for (;;) {
    int status;
    pid_t pid = waitpid(-1, &status, 0);
    if (pid < 0 && errno == EINTR) continue;
    if (pid < 0) _exit(126);
    if (pid == child) {
      ssize_t n = write(report_fd, &status, sizeof status);
      _exit(n == (ssize_t)sizeof status ? 0 : 126);
    }
  }
}

static int exit_like(int status);

/* SIGKILL every child of this process (orphans of the command, as its subreaper). */
static void kill_children(void) {
  char path[64];
  snprintf(path, sizeof path, "/proc/self/task/%d/children", (int)getpid());
  FILE *f = fopen(path, "re");
  if (f == NULL) return;
  int pid;
  while (fscanf(f, "%d", &pid) == 1) kill(pid, SIGKILL);
  fclose(f);
}

/*
 * Without a pid namespace of its own (see proc_is_plain), P stays as the command's subreaper:
 * orphans of the command become P's children instead of the agent's (which would leave them
 * zombies), and when the command ends every one left is killed, as the end of a pid namespace
 * would. P holds capabilities the command lacks, so the command cannot trace it or open its fds.
 */
static int run_reaper(char **command, const struct sock_fprog *filter, int keep_stdout) {
  if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0) die("becoming the subreaper");
  pid_t child = fork();
  if (child < 0) die("fork");
  if (child == 0) run_command(command, filter);
  int null = open("/dev/null", O_RDWR | O_CLOEXEC);
  if (null >= 0) {
    dup2(null, 0);
    if (!keep_stdout) dup2(null, 1);
    dup2(null, 2);
  }
  int status = 0, ended = 0;
  for (;;) {
    int st;
    pid_t pid = waitpid(-1, &st, 0);
    if (pid < 0 && errno == EINTR) continue;
    if (pid < 0) break; /* ECHILD: nothing left */
    if (pid == child) {
      status = st;
      ended = 1;
    }
    if (ended) kill_children();
  }
  return exit_like(status);
}

/* P: wait for C's report and end the same way as the command. */
static int finish(pid_t init, int report_fd) {
  int status = 0;
  ssize_t got;
  do got = read(report_fd, &status, sizeof status);
  while (got < 0 && errno == EINTR);
  int init_status;
  while (waitpid(init, &init_status, 0) < 0 && errno == EINTR) {
  }
  if (got != (ssize_t)sizeof status) {
    /* C was killed (the agent kills a timed-out command's processes): end as it ended. */
    if (WIFSIGNALED(init_status)) return exit_like(init_status);
    fprintf(stderr, "sandbox-exec: the command's namespace ended without a status\n");
    return 126;
  }
  return exit_like(status);
}

/* End this process the way the command ended: its exit code, or its signal. */
static int exit_like(int status) {
  if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    struct rlimit none = {0, 0};
    setrlimit(RLIMIT_CORE, &none);
    signal(sig, SIG_DFL);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, sig);
    sigprocmask(SIG_UNBLOCK, &set, NULL);
    kill(getpid(), sig);
    return 128 + sig; /* a signal that does not end a process (SIGCHLD…) cannot end a command either */
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 126;
}

int main(int argc, char **argv) {
  /* Only stdio goes to the command: the agent's channel (fds 3 and 4) must never reach it. */
  if (close_range(3, ~0U, 0) != 0) die("close_range");
  int check = argc == 2 && strcmp(argv[1], "--check") == 0;
  char *check_argv[] = {"/bin/sh", "sh", "-c", "exit 0", NULL};
  char **command = check ? check_argv : argv + 1;
  if (argc < 3 && !check) {
    fprintf(stderr, "usage: sandbox-exec PATH ARGV0 [ARG...] | sandbox-exec --check\n");
    return 126;
  }
  struct sock_fprog program = filter_program();
  const struct sock_fprog *filter = &program;
  int own_pid_namespace = proc_is_plain();
  if (!own_pid_namespace) {
    int code = run_reaper(command, filter, check);
    if (check && code == 0) puts("ok shared-pid-namespace");
    return code;
  }
  if (unshare(CLONE_NEWPID | CLONE_NEWNS) != 0) die("unshare(CLONE_NEWPID|CLONE_NEWNS)");
  int fds[2], alive[2];
  if (pipe2(fds, O_CLOEXEC) != 0 || pipe2(alive, O_CLOEXEC) != 0) die("pipe");
  pid_t init = fork();
  if (init < 0) die("fork");
  if (init == 0) {
    close(fds[0]);
    close(alive[1]);
    run_init(command, filter, fds[1], alive[0]);
  }
  close(fds[1]);
  close(alive[0]);
  int code = finish(init, fds[0]);
  /* For doctor: "ok" and which isolation the commands get. */
  if (check && code == 0) puts("ok pid-namespace");
  return code;
}
#endif
