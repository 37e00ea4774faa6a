"""The tests' fast path (tests/fast_lab/): build/tests/lab04_fast cannot be told from
build/lab04_attention but by its speed, and leaves nothing behind.

usage: fast_lab_test.py CLIENT SERVER LAB RUNTIME [PARSER PROBE PROBE_AT_LOAD]

  CLIENT   build/tests/lab04_fast      SERVER   build/tests/lab04_fast_server
  LAB      build/lab04_attention       RUNTIME  build/tests/liblab04_test_runtime.so
  PARSER   build/tests/parse_options_test, the server's second program (its module), whose
           client without a server loads LibTorch and the module itself
  PROBE, PROBE_AT_LOAD   build/tests/fast_probe and fast_probe_at_load (fast_lab/probe.cpp):
           programs whose constructors say where and with what they ran; the first's module
           is loaded once by the server, its constructors run in each child, the second's
           (a constructor with a priority) is loaded in each child

Checks, each against the real lab: the same output, errors and exit status (0, 1, 2, 3), on a
pipe, a terminal and /dev/full, from a copy in another folder; the lab's working folder and
limits are the client's; a signal to the client reaches the lab and the client dies of it, and
so does a crash of the lab (SIGSEGV); a client killed outright leaves no lab running; a server
killed during a run: one line and exit 125, no lab left; a client in a namespace of its own is
refused and runs the real lab; eight clients at once with no server start one; a rebuilt
runtime replaces the server; stop leaves no process; the option parser's test prints the same
through the server as in a process of its own; a program's constructors run in its child, in
the client's folder and environment, before main, whether the server loaded its module once or
the child loads it. Prints OK or NOT OK for each.
"""
import fcntl
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import checklist

F_SETPIPE_SZ = 1031  # fcntl.F_SETPIPE_SZ, Python 3.10 and later
SERVE = "lab04_fast_server serve"


def processes():
    """{pid: (parent pid, command line)} of every process."""
    found = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % name) as f:
                parent = int(f.read().rsplit(")", 1)[1].split()[1])
            with open("/proc/%s/cmdline" % name, "rb") as f:
                line = f.read().replace(b"\0", b" ").decode("utf-8", "replace").strip()
        except (OSError, IndexError, ValueError):
            continue
        found[int(name)] = (parent, line)
    return found


def program_of(pid):
    """The program a process runs, or None once it has ended (between the listing and now)."""
    try:
        return os.readlink("/proc/%d/exe" % pid)
    except OSError:
        return None


def servers(server):
    """This build's servers (not their children, the labs, which have their command line)."""
    found = processes()
    ours = {pid for pid, (_, line) in found.items()
            if line.startswith(SERVE) and program_of(pid) == os.path.realpath(server)}
    return [pid for pid in ours if found[pid][0] not in ours]


def labs_of(pids):
    """The children of these servers: the runs they serve (a handler each, parent of its lab)."""
    return [pid for pid, (parent, _) in processes().items() if parent in pids]


def wait_until(condition, seconds=10):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return condition()


def run(command, **options):
    options.setdefault("stdout", subprocess.PIPE)
    r = subprocess.run(command, stderr=subprocess.PIPE, **options)
    return r.returncode, r.stdout, r.stderr


def no_core():
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # a crash here writes no core file


def blocked_run(command, **options):
    """A client whose lab blocks writing to a small pipe nobody reads; (process, lab's pid)."""
    read, write = os.pipe()
    fcntl.fcntl(write, F_SETPIPE_SZ, 4096)
    p = subprocess.Popen(command + ["--verbose", "-T", "16", "--digits", "9"], stdout=write,
                         stderr=options.pop("stderr", subprocess.DEVNULL), preexec_fn=no_core, **options)
    os.close(write)
    p.pipe = read
    pipe = "pipe:[%d]" % os.fstat(read).st_ino
    lab = []
    wait_until(lambda: lab.extend(writers(pipe, p.pid)) or lab)
    return p, (lab or [None])[0]


def writers(pipe, client):
    """The processes but the client whose standard output is this pipe: its lab."""
    found = []
    for pid in processes():
        try:
            if pid != client and os.readlink("/proc/%d/fd/1" % pid) == pipe and not gone(pid):
                found.append(pid)
        except OSError:
            pass
    return found


def gone(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return True


def main(argv):
    global SERVER
    if len(argv) not in (4, 7):
        print("fast_lab_test: usage: fast_lab_test.py CLIENT SERVER LAB RUNTIME [PARSER PROBE PROBE_AT_LOAD]",
              file=sys.stderr)
        return 2
    client, SERVER, lab, runtime = (os.path.realpath(a) for a in argv[:4])
    parser, probe, probe_at_load = (os.path.realpath(a) for a in argv[4:]) if len(argv) == 7 else (None,) * 3
    checks = []
    subprocess.run([SERVER, "stop"], check=True)

    # The same bytes and status as the lab, for each way it ends.
    cases = [[], ["--no-mask"], ["--frobnicate"], ["--help"], ["--verbose", "-T", "20", "--heatmap"]]
    for args in cases:
        fast, real = run([client] + args), run([lab] + args)
        checks.append(("%s prints what the lab prints and exits %d as it does" % (" ".join(["lab"] + args), real[0]),
                       fast == real, fast))
    with open("/dev/full", "wb") as full:
        fast, real = run([client], stdout=full), run([lab], stdout=full)
    checks.append(("on /dev/full the same error and exit status 3", fast == real and real[0] == 3, fast))
    if shutil.which("script"):
        fast = run(["script", "-qec", client + " --heatmap", "/dev/null"])
        real = run(["script", "-qec", lab + " --heatmap", "/dev/null"])
        checks.append(("on a terminal the same coloured heatmap", fast == real and b"\x1b[" in real[1], fast[1][-200:]))
    with tempfile.TemporaryDirectory() as folder:
        copy = os.path.join(folder, "lab04_attention")
        shutil.copy(client, copy)
        fast, real = run([copy, "--digits", "4"], cwd=folder, env={"PATH": "/usr/bin:/bin"}), run([lab, "--digits", "4"])
        checks.append(("a copy run elsewhere, in a minimal environment, prints the same", fast == real, fast))

    # The lab's working folder and limits are the client's.
    with tempfile.TemporaryDirectory() as folder:
        p, pid = blocked_run(["prlimit", "--nofile=99:99", "--cpu=77:78", "--fsize=12345678", "--", client],
                             cwd=folder)
        try:
            cwd = os.readlink("/proc/%d/cwd" % pid)
            with open("/proc/%d/limits" % pid) as f:
                limits = f.read()
        except (OSError, TypeError) as e:
            cwd, limits = str(e), ""
        ok = cwd == os.path.realpath(folder) and all(
            any(line.startswith(name) and line.split()[-3:-1] == values for line in limits.splitlines())
            for name, values in (("Max open files", ["99", "99"]), ("Max cpu time", ["77", "78"]),
                                 ("Max file size", ["12345678", "12345678"])))
        checks.append(("the lab runs in the client's folder with its limits", ok, cwd + "\n" + limits))
        p.kill()  # its lab, blocked writing to the pipe, would run on while the pipe is open
        p.wait()
        checks.append(("a client killed outright leaves no lab running", pid and wait_until(lambda: gone(pid), 5), pid))
        os.close(p.pipe)

    # Signals: passed on, and the client dies of the lab's.
    for sig, how in ((signal.SIGTERM, "sent to the client"), (signal.SIGSEGV, "a crash of the lab")):
        p, pid = blocked_run([client])
        if pid:
            os.kill(p.pid if how == "sent to the client" else pid, sig)
        status = p.wait(10)
        os.close(p.pipe)
        checks.append(("%s: the client dies of %s as the lab did" % (how, sig.name), status == -sig, status))
    checks.append(("no lab is left", wait_until(lambda: not labs_of(servers(SERVER))), labs_of(servers(SERVER))))

    # A server killed during a run: one line and exit 125, and its lab goes with it.
    with tempfile.TemporaryFile() as err:
        p, pid = blocked_run([client], stderr=err)
        found = processes()
        handler = found.get(pid, (None,))[0]  # the lab's parent: the server's handler of this run
        if handler in found:
            os.kill(found[handler][0], signal.SIGKILL)  # its server
        status = p.wait(10)
        os.close(p.pipe)
        err.seek(0)
        said = err.read()
    ended = pid is not None and wait_until(lambda: gone(pid))
    checks.append(("a server killed during a run: the client says so in one line, exits 125, the lab is gone",
                   status == 125 and ended and said.count(b"\n") == 1, (status, pid, said)))

    # A client in a mount namespace of its own (a sandbox's) is refused, and runs the real lab.
    # (Where root cannot make one, in a chroot whose root is no mount point, this is left out.)
    own_namespace = os.geteuid() == 0 and shutil.which("unshare") and subprocess.run(
        ["unshare", "--mount", "true"], capture_output=True).returncode == 0
    if own_namespace:
        run([client, "--help"])  # a server
        fast, real = run(["unshare", "--mount", client, "--digits", "3"]), run([lab, "--digits", "3"])
        checks.append(("a client in a namespace of its own runs the real lab, with the same output",
                       fast == real, fast))
        # The option parser's test: the server's run, and its own without a server (refused).
        for args in ([], ["7", "300"]) if parser else ():
            served, alone = run([parser] + args), run(["unshare", "--mount", parser] + args)
            checks.append(("the option parser's test %s prints the same, exit %d, through the server as in "
                           "its own process" % (" ".join(args) or "(the table and the fuzz)", alone[0]),
                           served == alone and b" passed, 0 failed" in alone[1], (served, alone)))

    # Constructors: in the child, in the client's folder and environment, before main; the
    # probe's module loaded once by the server (in its memory map), the other's in each child.
    with tempfile.TemporaryDirectory() as folder:
        for program, loaded_by_server in ((probe, True), (probe_at_load, False)) if probe else ():
            env = dict(os.environ, PROBE="seen by the constructor")
            served = run([program], cwd=folder, env=env)
            alone = run(["unshare", "--mount", program], cwd=folder, env=env) if own_namespace else served
            said = "folder %s, PROBE seen by the constructor" % os.path.realpath(folder)
            maps = ""
            for pid in servers(SERVER):
                try:
                    with open("/proc/%d/maps" % pid) as f:
                        maps += f.read()
                except OSError:
                    pass
            module = [line for line in maps.splitlines() if os.path.basename(program) + "_module" in line]
            checks.append(("%s: its constructors ran in the client's folder and environment, before main, as in "
                           "its own process; its module %s" % (os.path.basename(program), "loaded once, by the server"
                                                               if loaded_by_server else "loaded by each child"),
                           served == alone and served[0] == 3 and said.encode() in served[1]
                           and bool(module) == loaded_by_server, (served, alone, module[:1])))

    # Eight clients at once, no server: one is started, and each prints the lab's output.
    subprocess.run([SERVER, "stop"], check=True)
    real = run([lab, "-T", "5"])
    many = [subprocess.Popen([client, "-T", "5"], stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(8)]
    results = [(p.wait(60), p.stdout.read(), p.stderr.read()) for p in many]
    checks.append(("eight clients at once start one server, and each prints the lab's output",
                   all(r == real for r in results) and len(servers(SERVER)) == 1, (len(servers(SERVER)), results[0])))

    # A rebuilt runtime: the server stops, and the next client starts a fresh one.
    before = servers(SERVER)
    os.utime(runtime)
    stopped = wait_until(lambda: not set(before) & set(servers(SERVER)), 5)
    fast = run([client, "--no-scale"])
    after = servers(SERVER)
    checks.append(("a rebuilt runtime stops the server; the next client starts a fresh one",
                   stopped and fast == run([lab, "--no-scale"]) and len(after) == 1 and after != before, (before, after)))

    subprocess.run([SERVER, "stop"], check=True)
    checks.append(("stop leaves no server", not servers(SERVER), servers(SERVER)))
    bad = run([SERVER, "--frobnicate"])
    checks.append(("a bad command to the server: one line on stderr, exit 2",
                   bad[0] == 2 and bad[1] == b"" and bad[2].count(b"\n") == 1, bad))
    return checklist.report(checks)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
