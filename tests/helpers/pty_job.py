# pty_job.py OUT_FILE [--background] STEP... -- COMMAND...: a job-control shell in miniature. It
# becomes the session leader of a new pseudo-terminal, starts COMMAND as a job (its own process
# group; in the terminal's foreground unless --background), and plays the steps:
#   expect:TEXT   read the terminal until TEXT has appeared (after what earlier steps saw)
#   send:TEXT     type TEXT (\n, \x03 = Ctrl-C, \x1a = Ctrl-Z, ...)
#   stopped:SIG   the job stops on SIGSIG, the terminal's foreground is the shell's again
#   fg            the job gets the terminal back and SIGCONT, as `fg` does
#   exit:N        the job exits N, and the terminal's foreground is still the job's group
# Everything the terminal showed goes to OUT_FILE. Each wait gives up after 20 s: exit 1.
import codecs, os, pty, select, signal, sys, time

out_path, args = sys.argv[1], sys.argv[2:]
background = args[:1] == ["--background"]
if background:
    args = args[1:]
split = args.index("--")
steps, command = args[:split], args[split + 1:]

master, slave = pty.openpty()
slave_name = os.ttyname(slave)
os.setsid()
os.close(os.open(slave_name, os.O_RDWR))  # a session leader's first terminal: its controlling one
signal.signal(signal.SIGTTOU, signal.SIG_IGN)
shell_group = os.getpgrp()

ready_r, ready_w = os.pipe()  # the job execs once it is where the steps expect it
job = os.fork()
if job == 0:
    os.setpgid(0, 0)
    os.close(ready_w)
    os.read(ready_r, 1)
    os.close(ready_r)
    for sig in (signal.SIGINT, signal.SIGQUIT, signal.SIGTSTP, signal.SIGTTIN, signal.SIGTTOU,
                signal.SIGPIPE, signal.SIGCHLD):
        signal.signal(sig, signal.SIG_DFL)
    for fd in (0, 1, 2):
        os.dup2(slave, fd)
    os.close(master)
    os.execvp(command[0], command)
os.setpgid(job, job)
job_has_terminal = not background
if job_has_terminal:
    os.tcsetpgrp(slave, job)
os.close(ready_r)
os.write(ready_w, b"x")
os.close(ready_w)

seen = b""
searched = 0
out = open(out_path, "wb")


def fail(why):
    out.flush()
    sys.stderr.write("pty_job: %s; the terminal showed: %r\n" % (why, seen[-2000:]))
    os.killpg(job, signal.SIGKILL)
    sys.exit(1)


def read_some(timeout):
    global seen
    ready, _, _ = select.select([master], [], [], timeout)
    if ready:
        try:
            data = os.read(master, 65536)
        except OSError:
            data = b""
        seen += data
        out.write(data)
        out.flush()


def wait_job(what):
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        pid, status = os.waitpid(job, os.WUNTRACED | os.WNOHANG)
        if pid == job:
            return status
        read_some(0.02)
    fail("timed out waiting until " + what)


for step in steps:
    name, _, value = step.partition(":")
    if name == "expect":
        text = value.encode()
        deadline = time.monotonic() + 20
        while seen.find(text, searched) < 0:
            if time.monotonic() > deadline:
                fail("timed out waiting for %r" % value)
            read_some(0.05)
        searched = seen.find(text, searched) + len(text)
    elif name == "send":
        os.write(master, codecs.decode(value, "unicode_escape").encode("latin-1"))
    elif name == "stopped":
        status = wait_job("the job stops")
        want = getattr(signal, "SIG" + value)
        if not os.WIFSTOPPED(status) or os.WSTOPSIG(status) != want:
            fail("the job should have stopped on SIG%s, status %#x" % (value, status))
        holder = job if job_has_terminal else shell_group
        if os.tcgetpgrp(slave) != holder:
            fail("stopped, the terminal's foreground is group %d, not %d"
                 % (os.tcgetpgrp(slave), holder))
        os.tcsetpgrp(slave, shell_group)  # the shell takes the terminal, as after any stop
        job_has_terminal = False
    elif name == "fg":
        os.tcsetpgrp(slave, job)
        job_has_terminal = True
        os.killpg(job, signal.SIGCONT)
    elif name == "exit":
        status = wait_job("the job exits")
        if not os.WIFEXITED(status) or os.WEXITSTATUS(status) != int(value):
            fail("the job should have exited %s, status %#x" % (value, status))
        while select.select([master], [], [], 0)[0]:
            before = len(seen)
            read_some(0)
            if len(seen) == before:
                break
        if job_has_terminal and os.tcgetpgrp(slave) != job:
            fail("the terminal's foreground is group %d, not the job's %d, after the job"
                 % (os.tcgetpgrp(slave), job))
    else:
        fail("unknown step " + step)
out.close()
