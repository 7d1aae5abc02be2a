#!/usr/bin/env python3
# @where README's and the docs' examples as tests (`<!-- doctest: ... -->`
#   before a block) -- run by `tests/cli/readme.bats` against `make
#   demo-serve`
"""Run the command blocks of a Markdown file and check their shown output.

usage: doctest.py FILE.md [--require-markers] [--demo-env ENV --demo-dir DIR
                           --demo-log LOG --demo-port N --demo-rekor-port M]

A command block is an indented (4 spaces) block after a blank line. The
line before it (blank lines between allowed) is a marker saying what the
block is, and with --require-markers every block must have one:

  <!-- doctest: run -->        each command runs (in a scratch dir holding
                                ./winbuild, recipes/, overrides/, packer/ and
                                docs/ of the source tree) and must exit 0.
                                Lines starting "$ " are commands (a trailing
                                backslash continues them); the lines after a
                                command, up to the next one, are its shown
                                output: every run of lines between "..." lines
                                must appear in the real output (stdout and
                                stderr as a terminal shows them; blank lines
                                ignored), consecutively, in order. Without "$ "
                                every line is a command ("# ..." comments
                                dropped).
  <!-- doctest: demo -->       the same, while `make demo-serve` runs, its
                                demo dir as out/demo in the scratch dir (so
                                ". out/demo/demo.env" works as typed)
  <!-- doctest: demo-output -->the block shows `make demo`: its shown output is
                                checked against the output of the demo run
                                (LOG), the demo dir written as out/demo and the
                                ports as 8099 and 8100
  <!-- doctest: synopsis -->   each line is a synopsis "winbuild CMD [SUB] ...":
                                the command exists and takes every option shown
                                ('winbuild CMD [SUB] --help' lists it)
  <!-- doctest: skip REASON -->not run; REASON must say why

In shown output, "..." inside a line matches any text, and a run of 16 or
more hex digits matches any hex digits of that length (digests and key ids
are made per machine). Prints one line per block, exits 1 if any failed.
"""
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

MARK = re.compile(r"^<!-- doctest: (run|demo|demo-output|synopsis|skip)(?: (.*?))? -->$")


def blocks(path):
    """(line number, marker kind, marker text, block lines) per block."""
    lines = open(path, encoding="utf-8").read().split("\n")
    out, i = [], 0
    while i < len(lines):
        if lines[i].startswith("    ") and (i == 0 or not lines[i - 1].strip()):
            start = i
            body = []
            while i < len(lines) and (lines[i].startswith("    ") or
                                      (not lines[i].strip() and i + 1 < len(lines) and
                                       lines[i + 1].startswith("    "))):
                body.append(lines[i][4:])
                i += 1
            j = start - 1
            while j >= 0 and not lines[j].strip():
                j -= 1
            m = MARK.match(lines[j].strip()) if j >= 0 else None
            out.append((start + 1, m.group(1) if m else None,
                        (m.group(2) or "") if m else "", body))
            continue
        i += 1
    return out


def commands(body):
    """[(command, shown output lines)] of a block."""
    cmds, cur, shown = [], None, []
    dollar = any(l.startswith("$ ") for l in body)
    i = 0
    while i < len(body):
        l = body[i]
        if dollar and not l.startswith("$ "):
            shown.append(l)
            i += 1
            continue
        if cur is not None:
            cmds.append((cur, shown))
        cmd = l[2:] if dollar else l
        while cmd.endswith("\\") and i + 1 < len(body):
            i += 1
            cmd = cmd[:-1] + " " + body[i].strip()
        if not dollar:
            cmd = re.sub(r"\s+#.*$", "", cmd)
        cur, shown = cmd.strip(), []
        i += 1
    if cur is not None:
        cmds.append((cur, shown))
    return [(c, s) for c, s in cmds if c]


def line_re(shown):
    out = ""
    for part in re.split(r"(\.\.\.|[0-9a-f]{16,})", shown.strip()):
        if part == "...":
            out += ".*"
        elif re.fullmatch(r"[0-9a-f]{16,}", part):
            out += "[0-9a-f]{%d}" % len(part)
        else:
            out += re.escape(part)
    return re.compile("^" + out + "$")


def check_output(shown, actual):
    """None when SHOWN (with '...' gaps) is in ACTUAL, else a message."""
    while shown and not shown[-1].strip():
        shown = shown[:-1]
    segs, cur = [], []
    for l in shown:
        if l.strip() == "...":
            if cur:
                segs.append(cur)
            cur = []
        elif l.strip():
            cur.append(l)
    if cur:
        segs.append(cur)
    act = [l.strip() for l in actual.split("\n") if l.strip()]
    pos = 0
    for seg in segs:
        res = [line_re(l) for l in seg]
        found = -1
        for k in range(pos, len(act) - len(seg) + 1):
            if all(res[n].match(act[k + n]) for n in range(len(seg))):
                found = k
                break
        if found < 0:
            return "shown output not found (in order):\n    " + "\n    ".join(seg)
        pos = found + len(seg)
    return None


def scratch(src, demo):
    d = tempfile.mkdtemp(prefix="doctest.")
    os.symlink(os.environ["WINBUILD"], os.path.join(d, "winbuild"))
    for n in ("recipes", "overrides", "packer", "docs"):
        os.symlink(os.path.join(src, n), os.path.join(d, n))
    if demo:
        os.mkdir(os.path.join(d, "out"))
        os.symlink(demo, os.path.join(d, "out", "demo"))
    return d


def run_block(kind, body, src, env, demo):
    d = scratch(src, demo)
    try:
        for cmd, shown in commands(body):
            p = subprocess.run(["bash", "-c", cmd], cwd=d, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True, timeout=600)
            if p.returncode:
                return "'%s' exited %d:\n%s" % (cmd, p.returncode, p.stdout[-4000:])
            msg = check_output(shown, p.stdout)
            if msg:
                return "'%s': %s\n--- real output:\n%s" % (cmd, msg, p.stdout)
    finally:
        shutil.rmtree(d, ignore_errors=True)
    return None


def synopsis(body, env):
    for line in body:
        line = re.sub(r"\s+#.*$", "", line).strip()
        if not line:
            continue
        words = shlex.split(line)
        if words[0] not in ("winbuild", "./winbuild"):
            return "'%s' is not a winbuild synopsis" % line
        cmd = [words[1]]
        p = subprocess.run([os.environ["WINBUILD"], "help"], env=env, capture_output=True, text=True)
        if not re.search(r"^  %s\b" % re.escape(cmd[0]), p.stdout, re.M):
            return "'%s': no command '%s' in 'winbuild help'" % (line, cmd[0])
        if len(words) > 2 and re.fullmatch(r"[a-z]+", words[2]):
            sub = subprocess.run([os.environ["WINBUILD"], cmd[0], words[2], "--help"], env=env,
                                 capture_output=True, text=True)
            if sub.returncode == 0:
                cmd.append(words[2])
        p = subprocess.run([os.environ["WINBUILD"]] + cmd + ["--help"], env=env,
                           capture_output=True, text=True)
        listed = set(re.findall(r"(?<![\w-])(--?[A-Za-z][\w-]*)", p.stdout + p.stderr))
        for w in words[2:]:
            for o in re.findall(r"^\[?(--?[A-Za-z][\w-]*)", w):
                if o not in listed:
                    return "'%s': 'winbuild %s --help' lists no option '%s'" % (
                        line, " ".join(cmd), o)
    return None


def main():
    args = sys.argv[1:]
    path = args.pop(0)
    require = "--require-markers" in args
    opt = {}
    for k in ("--demo-env", "--demo-dir", "--demo-log", "--demo-port", "--demo-rekor-port"):
        if k in args:
            opt[k] = args[args.index(k) + 1]
    src = os.environ["WB_SRC"]
    env = dict(os.environ)
    env.pop("WINBUILD_SET", None)
    failed = 0
    for lineno, kind, text, body in blocks(path):
        where = "%s:%d" % (os.path.relpath(path, src), lineno)
        msg = None
        if kind is None:
            if not require:
                continue
            msg = "no '<!-- doctest: ... -->' marker before this command block"
        elif kind == "skip":
            if not text.strip():
                msg = "'doctest: skip' needs a reason"
        elif kind == "run":
            msg = run_block(kind, body, src, env, None)
        elif kind == "synopsis":
            msg = synopsis(body, env)
        elif "--demo-env" not in opt:
            msg = "a demo block, and no demo is running (--demo-env)"
        elif kind == "demo":
            if not os.path.exists(opt["--demo-env"]):
                msg = "the demo wrote no %s" % opt["--demo-env"]
            else:
                msg = run_block(kind, body, src, env, opt["--demo-dir"])
        elif kind == "demo-output":
            log = open(opt["--demo-log"], encoding="utf-8").read()
            log = log.replace(opt["--demo-dir"], "out/demo")
            log = log.replace("127.0.0.1:%s/" % opt["--demo-port"], "127.0.0.1:8099/")
            log = log.replace("127.0.0.1:%s/" % opt["--demo-rekor-port"], "127.0.0.1:8100/")
            for cmd, shown in commands(body):
                msg = check_output(shown, log)
                if msg:
                    msg = "'%s': %s\n--- real output:\n%s" % (cmd, msg, log)
                    break
        if msg:
            failed += 1
            print("not ok %s (%s): %s" % (where, kind or "unmarked", msg))
        else:
            print("ok %s (%s%s)" % (where, kind, (": " + text) if text else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
