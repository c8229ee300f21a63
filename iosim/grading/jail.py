"""The launcher of an isolated student process (Linux): namespaces, a private view, no privileges.

This file runs as ``python -I -S -c <its own text>`` (:mod:`iosim.grading.isolation` starts
it; it imports nothing but the standard library). It reads its configuration, one JSON
object, from standard input, and reports on the grader's status pipe, one line each:
``ready`` once the student's interpreter has started, then ``exit N`` or ``signal N``
when it ends, or ``error MESSAGE`` if the sandbox could not be built.

Three processes, each waiting on the next:

* the *keeper* (host namespaces, the grader's user): forks the second, writes its user
  and group maps (``/proc/PID/uid_map``), and on SIGTERM kills the third, whose death
  ends everything in the sandbox;
* the *unsharer*: ``unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET |
  CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWCGROUP)``, then forks the third;
* *init*, PID 1 of the new PID namespace: builds the view (a tmpfs root, read-only bind
  mounts, a fresh ``/proc``, a minimal ``/dev``, a private ``/tmp``), ``pivot_root`` into
  it, detaches the old root, takes the student's identity, drops every capability and sets
  ``no_new_privs``; then forks the student's process (PID 2), which sets its resource limits
  and ``execve``s the interpreter. When the student's process ends, init reports how and
  exits, and the kernel kills whatever else is left in the namespace.

Each process dies with its parent (``PR_SET_PDEATHSIG``), so killing the keeper, or the
grader, tears the sandbox down too.
"""

import ctypes
import json
import os
import platform
import resource
import select
import signal
import socket
import sys

CLONE_NEWNS, CLONE_NEWCGROUP, CLONE_NEWUTS = 0x00020000, 0x02000000, 0x04000000
CLONE_NEWIPC, CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET = 0x08000000, 0x10000000, 0x20000000, 0x40000000
NAMESPACES = (CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS
              | CLONE_NEWCGROUP)
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_NOATIME, MS_NODIRATIME, MS_BIND = 32, 1024, 2048, 4096
MS_REC, MS_PRIVATE, MS_RELATIME = 16384, 1 << 18, 1 << 21
MNT_DETACH = 2
PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_CAPBSET_DROP = 1, 4, 24
PR_SET_NO_NEW_PRIVS, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 38, 47, 4
#: pivot_root has no glibc wrapper: its system call number, by machine
SYS_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41, "riscv64": 41, "ppc64le": 203, "s390x": 217}
#: limits the student's process gets (name in the configuration: resource)
LIMITS = {"core": resource.RLIMIT_CORE, "fsize": resource.RLIMIT_FSIZE, "as": resource.RLIMIT_AS,
          "cpu": resource.RLIMIT_CPU, "nproc": resource.RLIMIT_NPROC, "nofile": resource.RLIMIT_NOFILE}

libc = ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _b(text):
    return None if text is None else os.fsencode(text)


def mount(source, target, fstype=None, flags=0, data=None) -> None:
    _check(libc.mount(_b(source), _b(target), _b(fstype), ctypes.c_ulong(flags), _b(data)), f"mount {target}")


def prctl(option: int, arg: int = 0) -> None:
    _check(libc.prctl(option, ctypes.c_ulong(arg), 0, 0, 0), f"prctl {option}")


def report(fd: int, line: str) -> None:
    """One line to the grader's status pipe (ignored if the grader has gone)."""
    try:
        os.write(fd, (line.replace("\n", " ")[:2000] + "\n").encode("utf-8", "replace"))
    except OSError:
        pass


def die_with_parent(parent: int | None) -> None:
    """SIGKILL when the parent dies; exit now if it already has."""
    prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if parent is not None and os.getppid() != parent:
        os._exit(1)


def _close(fd: int | None) -> None:
    if fd is not None:
        os.close(fd)


def read_line(fd: int) -> str:
    data = b""
    while not data.endswith(b"\n"):
        chunk = os.read(fd, 256)
        if not chunk:
            break
        data += chunk
    return data.decode().strip()


# -- the keeper: host namespaces ---------------------------------------------------------------
def keeper(config: dict) -> None:
    status = config["status_fd"]
    go_r, go_w = os.pipe()
    back_r, back_w = os.pipe()
    me = os.getpid()
    pid = os.fork()
    if pid == 0:
        os.close(go_w), os.close(back_r)
        _guarded(status, "unshare", lambda: unsharer(config, me, go_r, back_w))
    os.close(go_r), os.close(back_w)
    _close(config["socket_fd"])
    state = {"unsharer": pid, "init": None, "stopping": False}
    signal.signal(signal.SIGTERM, lambda *_: _stop(state))
    if read_line(back_r) == "unshared":
        write_maps(pid, config)
        os.write(go_w, b"go\n")
        line = read_line(back_r)
        if line.isdigit():
            try:
                state["init"] = os.pidfd_open(int(line))
            except OSError:
                pass
            if state["stopping"]:
                _stop(state)
    os.waitpid(pid, 0)


def _stop(state: dict) -> None:
    """SIGTERM: kill init (the whole namespace goes with it), or the unsharer before init exists."""
    state["stopping"] = True
    try:
        if state["init"] is not None:
            signal.pidfd_send_signal(state["init"], signal.SIGKILL)
        else:
            os.kill(state["unsharer"], signal.SIGKILL)
    except OSError:
        pass


def write_maps(pid: int, config: dict) -> None:
    """The student's uid inside; as root, also root inside mapped to root (for building the view),
    the student's uid mapped to an unprivileged one outside (RLIMIT_NPROC holds only for non-root)."""
    inside, uid, gid = config["uid"], os.geteuid(), os.getegid()
    if config["mapping"] == "root":
        outside = config["nobody"]
        users, groups = f"0 {uid} 1\n{inside} {outside} 1\n", f"0 {gid} 1\n{inside} {outside} 1\n"
    else:
        with open(f"/proc/{pid}/setgroups", "w") as f:
            f.write("deny")
        users, groups = f"{inside} {uid} 1\n", f"{inside} {gid} 1\n"
    for name, text in (("uid_map", users), ("gid_map", groups)):
        with open(f"/proc/{pid}/{name}", "w") as f:
            f.write(text)


# -- the unsharer ---------------------------------------------------------------------------
def unsharer(config: dict, keeper_pid: int, go_r: int, back_w: int) -> None:
    die_with_parent(keeper_pid)
    _check(libc.unshare(NAMESPACES), "unshare")
    os.write(back_w, b"unshared\n")
    if read_line(go_r) != "go":
        os._exit(1)
    keep_r, keep_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(keep_w), os.close(back_w)
        _guarded(config["status_fd"], "sandbox", lambda: init(config, keep_r))
    os.close(keep_r)
    _close(config["socket_fd"])
    os.write(back_w, f"{pid}\n".encode())
    os.waitpid(pid, 0)


# -- init: PID 1 of the new namespace ---------------------------------------------------------
def init(config: dict, keep_r: int) -> None:
    die_with_parent(None)  # the parent is outside this PID namespace: getppid() is 0 here
    if select.select([keep_r], [], [], 0)[0]:  # end of file: the unsharer died before PDEATHSIG was set
        os._exit(1)
    os.setsid()
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # init ignores signals it has no handler for
    build_view(config["mounts"])
    try:  # no nested user namespaces: no capabilities to be had anywhere below this one
        with open("/proc/sys/user/max_user_namespaces", "w") as f:
            f.write("0")
    except OSError:
        pass  # hardening only: nothing of the machine is in view of a nested namespace either
    socket.sethostname(config["hostname"])
    become_student(config)
    exec_r, exec_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        _guarded(exec_w, "", lambda: student(config, exec_w), code=127)
    os.close(exec_w)
    _close(config["socket_fd"])
    failure = os.read(exec_r, 2000).decode("utf-8", "replace")
    status = config["status_fd"]
    if failure:
        report(status, f"error starting the interpreter: {failure.strip()}")
        os._exit(1)
    report(status, "ready")
    while True:
        child, how = os.waitpid(-1, 0)
        if child == pid:
            report(status, f"signal {os.WTERMSIG(how)}" if os.WIFSIGNALED(how) else f"exit {os.WEXITSTATUS(how)}")
            os._exit(0)  # init's exit kills everything left in the namespace


def build_view(mounts: list) -> None:
    """Stage on a tmpfs over /tmp, pivot into it (the old root at /oldroot), build /newroot from
    /oldroot's files, detach the old root, pivot into /newroot, and make its root read-only."""
    pivot = SYS_PIVOT_ROOT[platform.machine()]
    mount(None, "/", None, MS_REC | MS_PRIVATE)
    mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "size=64k,mode=0700")
    os.chdir("/tmp")
    os.mkdir("oldroot"), os.mkdir("newroot")
    _check(libc.syscall(pivot, b".", b"oldroot"), "pivot_root")
    os.chdir("/")
    mount("tmpfs", "/newroot", "tmpfs", MS_NOSUID | MS_NODEV, "size=256k,nr_inodes=512,mode=0755")
    for kind, source, target in mounts:
        add(kind, source, "/newroot" + target)
    _check(libc.umount2(b"/oldroot", MNT_DETACH), "umount /oldroot")
    os.chdir("/newroot")
    _check(libc.syscall(pivot, b".", b"."), "pivot_root")
    _check(libc.umount2(b".", MNT_DETACH), "umount the staging root")
    os.chdir("/")
    seal("/")


def add(kind: str, source, path: str) -> None:
    """One entry of the view: ro (bind, read-only), dev (bind a device file), tmpfs, proc, link, seal."""
    if kind == "link":
        os.makedirs(os.path.dirname(path), 0o755, exist_ok=True)
        os.symlink(source, path)
        return
    if kind == "seal":
        seal(path)
        return
    old = "/oldroot" + source if kind in ("ro", "dev") else None
    if old is not None and not os.path.isdir(old):
        os.makedirs(os.path.dirname(path), 0o755, exist_ok=True)
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o444))
    else:
        os.makedirs(path, 0o755, exist_ok=True)
    if kind == "tmpfs":
        mount("tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV, source)
    elif kind == "proc":
        mount("proc", path, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    else:
        mount(old, path, None, MS_BIND)
        if kind == "ro":
            seal(path)


def seal(path: str) -> None:
    """Remount read-only, nosuid, nodev, keeping the flags the kernel locks in a user namespace."""
    f = os.statvfs(path).f_flag
    keep = ((MS_NOEXEC if f & os.ST_NOEXEC else 0) | (MS_NOATIME if f & os.ST_NOATIME else 0)
            | (MS_NODIRATIME if f & os.ST_NODIRATIME else 0) | (MS_RELATIME if f & os.ST_RELATIME else 0))
    mount(None, path, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | keep)


def become_student(config: dict) -> None:
    """The student's uid and gid, no supplementary groups, no capabilities, no way to gain any."""
    last = int(open("/proc/sys/kernel/cap_last_cap").read())
    for cap in range(last + 1):
        prctl(PR_CAPBSET_DROP, cap)
    uid = config["uid"]
    if config["mapping"] == "root":
        os.setgroups([])
    if os.getgid() != uid:
        os.setresgid(uid, uid, uid)
    if os.getuid() != uid:
        os.setresuid(uid, uid, uid)
    header = (ctypes.c_uint32 * 2)(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this process
    _check(libc.capset(header, (ctypes.c_uint32 * 6)()), "capset")
    _check(libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0), "clear ambient capabilities")
    prctl(PR_SET_NO_NEW_PRIVS, 1)
    prctl(PR_SET_DUMPABLE, 0)  # the student's process (same uid) cannot ptrace init or read its /proc files


def student(config: dict, exec_w: int) -> None:
    """PID 2: limits, a clean set of descriptors and signals, then the interpreter."""
    os.setsid()
    for name, value in config["limits"].items():
        hard = resource.getrlimit(LIMITS[name])[1]  # only ever lowered: an outer limit may be tighter
        value = value if hard == resource.RLIM_INFINITY else min(value, hard)
        resource.setrlimit(LIMITS[name], (value, value))
    null = os.open("/dev/null", os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    keep = {0, 1, 2, config["socket_fd"], exec_w}
    for fd in map(int, os.listdir("/proc/self/fd")):
        if fd not in keep:
            try:
                os.set_inheritable(fd, False)
            except OSError:
                pass
    if config["socket_fd"] is not None:
        os.set_inheritable(config["socket_fd"], True)
    for sig in (signal.SIGPIPE, signal.SIGXFSZ, signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_DFL)
    os.chdir(config["cwd"])
    os.execve(config["argv"][0], config["argv"], config["env"])


def _guarded(fd: int, where: str, body, code: int = 1) -> None:
    """Run a forked process's body; any failure is one line on ``fd``; never return."""
    try:
        body()
    except BaseException as exc:  # noqa: BLE001 - reported, then this process ends
        report(fd, f"error {where}: {exc}" if where else str(exc))
        os._exit(code)
    os._exit(0)


def main() -> None:
    config = json.loads(sys.stdin.buffer.read())
    null = os.open("/dev/null", os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    status = config["status_fd"]
    os.set_inheritable(status, False)
    try:
        die_with_parent(config["parent"])
        config["mapping"] = "root" if os.geteuid() == 0 else "self"
        keeper(config)
    except BaseException as exc:  # noqa: BLE001
        report(status, f"error launcher: {exc}")
        os._exit(1)
    os._exit(0)


if __name__ == "__main__":
    main()
