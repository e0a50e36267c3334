#!/usr/bin/env bash
# The examples of README.md and docs/*.md (but the contract) run as written. Every fenced block carries a mark after
# its language in the info string, and the test fails on a block without one (or on an indented
# code block, which can carry none), so no example slips through unchecked:
#
#   ```sh run           a shell script, run with bash -e; it must exit 0
#   ```console run      a transcript: each "$ " line is a command (a line ending in \ goes on on
#                       the next), the lines after it its output, stdout and stderr together;
#                       "..." in a line stands for any text, a line "..." alone for any lines
#   ```sh daemon        a daemon (one `idem serve` with --listen 127.0.0.1:PORT), started in the
#                       background and running for the blocks after it in its section
#   ```json file=NAME   written to NAME in the section's folder (executable if it starts "#!")
#   ```sh norun         not run here (a crontab, a systemd unit, apt, another machine)
#
# A block hidden from the reader is an HTML comment, "<!-- docs-test MARK" on a line of its own,
# its text, and "-->": the set-up an example needs (a stand-in for ./backup.sh, an upstream, a
# file of bin/ that replaces a program reaching off the machine).
#
# Each section (the text under one heading) runs in a folder of its own with a store of its own
# (IDEM_DB, HOME and TMPDIR inside it), its bin/ first on PATH, then the built idem, and
# examples/ of the repository beside it; a file .env of the section is sourced by every block.
# A daemon listens on a free port of 127.0.0.1 (its --listen is made port 0 with a port file)
# and every later 127.0.0.1:PORT of the section is made that port; a runnable block naming a
# loopback port no daemon of its section listens on fails, so no example reaches a real service.
# Daemons are stopped by their process group at the end of their section, whatever happens.
# The relative links of the docs name files that exist, and headings they have.
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/lib.sh"
root=$(cd "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/.." && pwd)
command -v python3 >/dev/null || fail "python3 is missing (scripts/deps.sh installs it)"
command -v curl >/dev/null || fail "curl is missing (scripts/deps.sh installs it)"
mkdir "$T/bin"
ln -s "$IDEM_BIN" "$T/bin/idem"

# The process groups of the daemons and blocks (one a line), for when python3 dies before it has
# stopped them: each process of such a group that carries this test's mark is killed.
: >"$T/groups"
_kill_groups() {
  local rc=$? stat content fields pgid
  declare -A ours=()
  while read -r pgid; do ours[$pgid]=1; done <"$T/groups"
  if ((${#ours[@]} > 0)); then
    for stat in /proc/[0-9]*/stat; do
      content=$(cat "$stat" 2>/dev/null) || continue
      read -r -a fields <<<"${content##*) }"  # state, ppid, pgrp, ...
      [[ -n ${ours[${fields[2]}]-} ]] || continue
      stat=${stat#/proc/}
      _kill_ours "${stat%/stat}"
    done
  fi
  return $rc
}
trap '_kill_groups; _cleanup' EXIT

# docs/contract.md is the contract: its blocks are synopses, and the unit tests read its config.
docs=("$root/README.md")
for doc in "$root"/docs/*.md; do [[ $doc == */contract.md ]] || docs+=("$doc"); done
# IDEM_DOCS_ONLY=FILE...: only these (a faster loop while writing a guide).
[[ -z ${IDEM_DOCS_ONLY:-} ]] || read -r -a docs <<<"$IDEM_DOCS_ONLY"
python3 - "$root" "$T" "${docs[@]}" <<'EOF' || fail "a documented example does not work as shown (above)"
import os, re, shutil, signal, subprocess, sys, time

root, T, docs = sys.argv[1], sys.argv[2], sys.argv[3:]
BLOCK_SECONDS = 30
MARKS = ('run', 'daemon', 'norun')
failures = []


def parse(path):
    """Sections of a Markdown file: [(heading, [block])], a block a dict."""
    rel = os.path.relpath(path, root)
    lines = open(path, encoding='utf-8').read().split('\n')
    sections, errors = [['(top)', []]], []
    i = 0
    while i < len(lines):
        line = lines[i]
        where = '%s:%d' % (rel, i + 1)
        fence = re.match(r'^( *)(```+)(.*)$', line)
        hidden = re.match(r'^<!-- docs-test (.*)$', line)
        if fence or hidden:
            if fence:
                indent, ticks, info = len(fence.group(1)), fence.group(2), fence.group(3).split()
                lang, marks = (info[0], info[1:]) if info else ('', [])
                end = lambda l: re.match(r'^ *' + ticks + r'\s*$', l)
            else:
                indent, lang, marks = 0, 'sh', hidden.group(1).split()
                end = lambda l: l.strip() == '-->'
            j = i + 1
            while j < len(lines) and not end(lines[j]):
                j += 1
            if j == len(lines):
                errors.append('%s: the block never ends' % where)
                break
            text = '\n'.join(l[indent:] if l[:indent].strip() == '' else l for l in lines[i + 1:j])
            kinds = [m for m in marks if m in MARKS or m.startswith('file=')]
            if len(kinds) != 1 or len(marks) != 1:
                errors.append('%s: a block needs exactly one mark of run, daemon, file=NAME or norun'
                              ' after its language (```%s %s)' % (where, lang, ' '.join(marks)))
            else:
                sections[-1][1].append(dict(where=where, lang=lang, mark=kinds[0], text=text + '\n',
                                            hidden=bool(hidden)))
            i = j + 1
            continue
        if re.match(r'^#{1,6} ', line):
            sections.append([line.lstrip('#').strip(), []])
        elif re.match(r'^ {4,}\S', line) and i > 0 and lines[i - 1].strip() == '' and \
                not re.match(r'^ *([-*]|\d+\.) ', line):
            errors.append('%s: an indented code block (fence it, with a mark)' % where)
        i += 1
    return sections, errors


def forget(pgid):
    path = os.path.join(T, 'groups')
    left = [l for l in open(path).read().split() if l != str(pgid)]
    with open(path, 'w') as groups:
        groups.write(''.join(l + '\n' for l in left))


def kill_group(proc, grace):
    """TERM the group of proc (its leader's pid), wait for the leader, then KILL what is left."""
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        pass
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()
    forget(proc.pid)


def start(script, folder, env, out, err):
    proc = subprocess.Popen(['bash', script], cwd=folder, env=env, stdin=subprocess.DEVNULL,
                            stdout=out, stderr=err, start_new_session=True)
    with open(os.path.join(T, 'groups'), 'a') as groups:
        groups.write('%d\n' % proc.pid)
    return proc


def match(want, got):
    """want: expected lines ("..." in a line is any text, a "..." line any lines)."""
    if not want:
        return not got
    if want[0].strip() == '...':
        return any(match(want[1:], got[k:]) for k in range(len(got) + 1))
    if not got:
        return False
    pattern = '.*'.join(re.escape(p) for p in want[0].split('...'))
    return re.fullmatch(pattern, got[0]) is not None and match(want[1:], got[1:])


def transcript(text):
    """[(command, [expected line])] of a console block."""
    steps, lines, k = [], text.rstrip('\n').split('\n'), 0
    while k < len(lines):
        if not lines[k].startswith('$ '):
            raise ValueError('a console block starts with "$ ": %r' % lines[k])
        command = lines[k][2:]
        while command.endswith('\\') and k + 1 < len(lines):
            k += 1
            command += '\n' + lines[k]
        k += 1
        output = []
        while k < len(lines) and not lines[k].startswith('$ '):
            output.append(lines[k].rstrip())
            k += 1
        steps.append((command, output))
    return steps


def run_section(doc, number, heading, blocks):
    folder = os.path.join(T, 'docs', '%s-%d' % (os.path.basename(doc)[:-3], number))
    os.makedirs(os.path.join(folder, 'bin'))
    os.symlink(os.path.join(root, 'examples'), os.path.join(folder, 'examples'))
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(('IDEM_', 'XDG_')) or k == 'IDEM_TEST_DIR'}
    env.update(HOME=folder, TMPDIR=folder, IDEM_DB=os.path.join(folder, 'idem.db'), CI='true',
               PATH=os.pathsep.join([os.path.join(folder, 'bin'), os.path.join(T, 'bin'),
                                     os.environ['PATH']]))
    ports, daemons = {}, []
    prologue = 'cd %s\n[ ! -f .env ] || . ./.env\n' % folder

    def ports_in(text, where):
        for port in re.findall(r'(?:127\.0\.0\.1|localhost):(\d+)', text):
            if port != '0' and port not in ports:
                raise ValueError('%s: 127.0.0.1:%s is no daemon of this section' % (where, port))
        return re.sub(r'(127\.0\.0\.1|localhost):(\d+)',
                      lambda m: '127.0.0.1:' + ports.get(m.group(2), m.group(2)), text)

    try:
        for n, block in enumerate(blocks):
            mark, where, text = block['mark'], block['where'], block['text']
            base = os.path.join(folder, '.block%d' % n)
            if mark == 'norun':
                continue
            if mark.startswith('file='):
                name = os.path.join(folder, mark[5:])
                os.makedirs(os.path.dirname(name), exist_ok=True)
                with open(name, 'w') as f:
                    f.write(ports_in(text, where))
                if text.startswith('#!'):
                    os.chmod(name, 0o755)
                continue
            if mark == 'daemon':
                listen = re.search(r'--listen 127\.0\.0\.1:(\d+)', text)
                if not listen:
                    raise ValueError('%s: a daemon block listens with --listen 127.0.0.1:PORT' % where)
                doc_port, port_file = listen.group(1), base + '.port'
                text = text.replace(listen.group(0), '--listen 127.0.0.1:0 --port-file ' + port_file)
                ports[doc_port] = '0'  # its own address, made port 0
                text = ports_in(text, where)
                del ports[doc_port]
                with open(base + '.sh', 'w') as f:
                    f.write(prologue + text)
                out, err = open(base + '.out', 'w'), open(base + '.err', 'w')
                proc = start(base + '.sh', folder, env, out, err)
                daemons.append(proc)
                deadline = time.monotonic() + 20
                while not (os.path.exists(port_file) and os.path.getsize(port_file) > 0):
                    if proc.poll() is not None:
                        raise ValueError('%s: the daemon exited %d before listening:\n%s' % (
                            where, proc.returncode, open(base + '.err').read()[-2000:]))
                    if time.monotonic() > deadline:
                        raise ValueError('%s: the daemon did not listen within 20 s' % where)
                    time.sleep(0.02)
                ports[doc_port] = open(port_file).read().strip()
                continue
            # run: a script, or a transcript whose outputs are compared.
            text = ports_in(text, where)
            steps = transcript(text) if block['lang'] == 'console' else None
            with open(base + '.sh', 'w') as f:
                if steps is None:
                    f.write(prologue + 'set -e\n' + text)
                else:
                    f.write(prologue)
                    for k, (command, _) in enumerate(steps):
                        f.write('{ %s\n} >%s.out%d 2>&1\n' % (command, base, k))
            with open(base + '.out', 'w') as out, open(base + '.err', 'w') as err:
                proc = start(base + '.sh', folder, env, out, err)
                try:
                    proc.wait(timeout=BLOCK_SECONDS)
                except subprocess.TimeoutExpired:
                    kill_group(proc, 0)
                    raise ValueError('%s: still running after %d s' % (where, BLOCK_SECONDS))
                kill_group(proc, 0)  # what the block left in the background
            if steps is None:
                if proc.returncode != 0:
                    raise ValueError('%s: exited %d\n--- stdout\n%s--- stderr\n%s' % (
                        where, proc.returncode, open(base + '.out').read()[-3000:],
                        open(base + '.err').read()[-3000:]))
                continue
            for k, (command, want) in enumerate(steps):
                got = open('%s.out%d' % (base, k), errors='replace').read().rstrip('\n')
                got = [l.rstrip() for l in got.split('\n')] if got else []
                if not match(want, got):
                    raise ValueError('%s: $ %s\n--- the doc shows\n%s\n--- it printed\n%s' % (
                        where, command, '\n'.join(want), '\n'.join(got)))
    finally:
        for proc in reversed(daemons):
            kill_group(proc, 10)
    shutil.rmtree(folder, ignore_errors=True)


def slug(heading):
    """The anchor GitHub gives a heading."""
    return re.sub(r'[^\w\- ]', '', heading.strip().lower()).replace(' ', '-')


def check_links(doc):
    """Each relative link names a file that exists, and a heading of it after a #."""
    errors, text = [], open(doc, encoding='utf-8').read()
    text = re.sub(r'```.*?```', '', text, flags=re.S)
    for target in re.findall(r'\]\(([^)\s]+)\)', text):
        if re.match(r'^[a-z]+:', target):
            continue
        path, _, anchor = target.partition('#')
        path = os.path.normpath(os.path.join(os.path.dirname(doc), path)) if path else doc
        if not os.path.exists(path):
            errors.append('%s: a link to %s, which does not exist' % (os.path.relpath(doc, root), target))
        elif anchor and path.endswith('.md'):
            headings = re.findall(r'^#{1,6} (.*)$', re.sub(r'```.*?```', '', open(path).read(),
                                                            flags=re.S), flags=re.M)
            if anchor not in [slug(h) for h in headings]:
                errors.append('%s: a link to %s, a heading it does not have' % (
                    os.path.relpath(doc, root), target))
    return errors


signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
counts = dict(run=0, daemon=0, file=0, norun=0)
for doc in docs:
    sections, errors = parse(doc)
    failures += errors + check_links(doc)
    for number, (heading, blocks) in enumerate(sections):
        for block in blocks:
            counts[block['mark'].split('=')[0]] += 1
        if errors or not any(b['mark'] in ('run', 'daemon') for b in blocks):
            continue
        try:
            run_section(doc, number, heading, blocks)
        except (ValueError, OSError) as e:
            failures.append('%s ("%s"): %s' % (os.path.relpath(doc, root), heading, e))
print('blocks: %(run)d run, %(daemon)d daemons, %(file)d files, %(norun)d not run' % counts)
for failure in failures:
    print('FAIL ' + failure, file=sys.stderr)
sys.exit(1 if failures else 0)
EOF
