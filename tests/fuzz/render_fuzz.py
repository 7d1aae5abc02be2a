#!/usr/bin/env python3
"""Renderer fuzzer with real parsers as oracles (issue 13, class 5).

Random byte strings go in as template values through the renderer
(tests/fuzz/render_oracle.c, linked against build/libwinbuild.a: the same
stage/render.c and lib/tmpl.c winbuild renders with). For every sink type,
each rendered output must parse with the real parser of that sink and give
back exactly the value, or the renderer must refuse the value:

  comment     tomllib, configparser, tree-sitter PowerShell (one comment line)
  toml        tomllib (basic string), toml_lit: tomllib (literal string)
  ini         configparser (its default interpolation on)
  json        json
  xml         xml.etree (attribute and text)
  ps          tree-sitter PowerShell (tests/ps): one verbatim string each
  ps_here     tree-sitter PowerShell: one verbatim here-string
  ps_native   + a model of Windows PowerShell 5.1 handing an argument list
  ps_msiprop    to a native program and of CommandLineToArgvW splitting it:
                the program must receive exactly the values
  ps_path     + the Windows PATH split at ';'
  ps_binpath  + the sc.exe binPath of packer/scripts/05-services.ps1.in:
                sc.exe receives it whole, kube-log-runner splits it back
  hcl, hcl_in Packer's own HCL2 parser (`packer console`, when packer is
              installed): every accepted value of a batch as a local, read
              back with jsonencode()

usage: render_fuzz.py [--seed N] [--count N | --seconds S] [--oracle PATH]
Exit 0 when every output passed; 1 on the first finding (printed with the
value in hex, so it can be replayed); 2 on setup errors.
"""
import argparse
import configparser
import json
import os
import random
import re
import shutil
import subprocess
import sys
import time
import tomllib
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


# ---- Windows command lines ---------------------------------------------

def ps51_needs_quotes(arg, tracking):
    """Windows PowerShell 5.1 wraps an argument in "..." when it holds
    whitespace; the later NeedQuotes also tracks quotes and backslashes.
    Both models are checked."""
    if not tracking:
        return any(c.isspace() for c in arg)
    in_quote = False
    backslashes = 0
    for c in arg:
        if c == '"' and backslashes % 2 == 0:
            in_quote = not in_quote
        elif c.isspace() and not in_quote:
            return True
        backslashes = backslashes + 1 if c == '\\' else 0
    return False


def ps51_command_line(args, tracking):
    """The command line 5.1 builds: no escaping at all; '' is dropped."""
    out = []
    for a in args:
        if a == '':
            continue
        out.append('"' + a + '"' if ps51_needs_quotes(a, tracking) else a)
    return ' '.join(out)


def command_line_to_argv(s):
    """CommandLineToArgvW / MSVCRT (2008+) splitting of the arguments after
    the program name: 2n backslashes + '"' give n backslashes and toggle
    quoting, 2n+1 give n and a literal '"', '""' inside quotes is a '"'."""
    args = []
    i, n = 0, len(s)
    while True:
        while i < n and s[i] in ' \t':
            i += 1
        if i >= n:
            return args
        cur, in_quote = [], False
        while i < n:
            c = s[i]
            if c in ' \t' and not in_quote:
                break
            if c == '\\':
                j = i
                while j < n and s[j] == '\\':
                    j += 1
                nb = j - i
                if j < n and s[j] == '"':
                    cur.append('\\' * (nb // 2))
                    if nb % 2:
                        cur.append('"')
                        i = j + 1
                    else:
                        i = j
                else:
                    cur.append('\\' * nb)
                    i = j
                continue
            if c == '"':
                if in_quote and i + 1 < n and s[i + 1] == '"':
                    cur.append('"')
                    i += 2
                    continue
                in_quote = not in_quote
                i += 1
                continue
            cur.append(c)
            i += 1
        args.append(''.join(cur))


def native_receives(args):
    """What a native program receives for ARGS, under both 5.1 models."""
    return [command_line_to_argv(ps51_command_line(args, t)) for t in (False, True)]


# ---- values -----------------------------------------------------------------

SPECIAL = ['"', "'", '\\', ';', '#', '$', '%', '`', '\n', '\r', '\t', ' ', '[', ']',
           '=', '{', '}', '@', '&', '<', '>', '/', ':', '.', '-',
           '\u2018', '\u2019', '\u201a', '\u201b', '\u201c', '\u201d',
           '\u2028', '\u2029', '\u0085', '\u00e9', '\u0451', '\ufffe', '\x7f', '\x01',
           "\n'@", '\nimports = ["x"]', '${', '%{', '""', '\\"', '&#', ']]>']


CORPUS = [t.encode('utf-8') for t in SPECIAL] + \
    [('a%sb' % t).encode('utf-8') for t in SPECIAL] + \
    [b'C:\\dir with space\\', b'C:\\nospace\\', b'%SystemRoot%', b'x y',
     b' lead', b'trail ', b'', b'2.1.4\nimports = ["C:/evil.toml"]',
     b'A="x" TRANSFORMS=evil.mst', b'C:\\k;C:\\evil', b"it's", b'{\n\'@\nx\n@\'\n}']


def random_value(rng):
    """A value as bytes: printable text, specials, valid UTF-8, raw bytes
    (never NUL: values are C strings)."""
    kind = rng.random()
    n = rng.randint(0, 24)
    if kind > 0.4:
        # plain values, so every sink also sees ones it accepts, with up to
        # three specials in them (one bad character among good ones)
        plain = [rng.choice('abcXYZ019._-/:=+C\\ ') for _ in range(n)]
        for _ in range(rng.choice([0, 0, 1, 1, 2, 3])):
            plain.insert(rng.randint(0, len(plain)), rng.choice(SPECIAL))
        return ''.join(plain).encode('utf-8')
    if kind < 0.15:
        return bytes(rng.randint(1, 255) for _ in range(n))
    parts = []
    for _ in range(n):
        r = rng.random()
        if r < 0.5:
            parts.append(rng.choice('abcXYZ019._-/:=+ C\\'))
        elif r < 0.85:
            parts.append(rng.choice(SPECIAL))
        else:
            cp = rng.randint(0x80, 0x10ffff)
            if 0xd800 <= cp <= 0xdfff:
                cp = 0xe9
            parts.append(chr(cp))
    return ''.join(parts).encode('utf-8')


def list_value(rng, most=3):
    return [random_value(rng) for _ in range(rng.randint(1, most))]


# ---- per-sink checks: (template, kind, check(output_text, values)) ------

def first_line_comment(out, v):
    lines = out.split('\n')
    return lines[0] == '# ' + v


def chk_comment_toml(out, vals):
    assert tomllib.loads(out) == {'k': 1}, 'TOML does not parse to k = 1'
    assert first_line_comment(out, vals[0]), 'comment changed the value'


def chk_comment_ini(out, vals):
    cp = configparser.ConfigParser()
    cp.read_string(out)
    assert cp.sections() == ['s'] and dict(cp['s']) == {'k': '1'}, 'INI changed'
    assert first_line_comment(out, vals[0]), 'comment changed the value'


def chk_toml(out, vals):
    assert tomllib.loads(out) == {'k': vals[0]}, 'TOML value differs'


def chk_ini(out, vals):
    cp = configparser.ConfigParser()
    cp.read_string(out)
    assert cp.sections() == ['s'] and list(cp['s']) == ['k'], 'INI structure changed'
    assert cp.get('s', 'k') == vals[0], 'INI value differs'


def chk_json(out, vals):
    assert json.loads(out) == {'k': vals[0]}, 'JSON value differs'


def chk_xml(out, vals):
    r = ET.fromstring(out)
    assert r.tag == 'r' and r.attrib == {'a': vals[0]}, 'XML attribute differs'
    assert (r.text or '') == vals[0] and len(r) == 0, 'XML text differs'


def ps_decode(tok):
    t = tok['text']
    if tok['type'] == 'verbatim_here_string_characters':
        assert t.startswith("@'\n") and t.endswith("\n'@"), 'here-string framing'
        return t[3:-3]
    assert len(t) >= 2 and t[0] == "'" and t[-1] == "'", 'string framing'
    return re.sub(r"''", "'", t[1:-1])


def ps_strings(ps, vals, here=False):
    assert ps['errors'] == 0, 'PowerShell parse error'
    assert ps['statements'] == 1 and ps['expandable'] == 0, 'PowerShell statements changed'
    got = [ps_decode(t) for t in ps['strings']]
    assert got == vals, 'PowerShell strings differ: %r' % got
    want = 'verbatim_here_string_characters' if here else 'verbatim_string_characters'
    assert all(t['type'] == want for t in ps['strings']), 'wrong string kind'


def chk_ps(out, vals, ps):
    ps_strings(ps, vals)


def chk_ps_here(out, vals, ps):
    ps_strings(ps, vals, here=True)


def chk_comment_ps(out, vals, ps):
    assert ps['errors'] == 0 and ps['statements'] == 1, 'PowerShell changed'
    assert ps['comments'] == ['# ' + vals[0]], 'comment differs'
    assert first_line_comment(out, vals[0])


def chk_native(out, vals, ps):
    ps_strings(ps, vals)
    for argv in native_receives(['/i'] + vals + ['/qn']):
        assert argv == ['/i'] + vals + ['/qn'], 'native program receives %r' % argv


def chk_msiprop(out, vals, ps):
    chk_native(out, vals, ps)
    for v in vals:
        assert re.match(r'^[A-Za-z_][A-Za-z0-9_.]*=', v), 'not PROPERTY=value'


def chk_path(out, vals, ps):
    ps_strings(ps, vals)
    joined = ';'.join(['C:\\a'] + vals + ['C:\\z'])
    assert joined.split(';') == ['C:\\a'] + vals + ['C:\\z'], 'PATH split differs'
    assert all('"' not in v and v.strip() == v and v for v in vals), 'PATH entry'


def chk_binpath(out, vals, ps):
    ps_strings(ps, vals)
    kube = vals[0]
    runner, kubelet = kube + '\\kube-log-runner.exe', kube + '\\kubelet.exe'
    flags = '--cert-dir=C:\\var\\lib\\kubelet\\pki --kubeconfig=C:\\etc\\kubernetes\\kubelet.conf'
    # 05-services.ps1.in: ('\"{0}\" --log-file=... \"{1}\" --windows-service {2}' -f ...)
    bp = ('\\"{0}\\" --log-file=C:\\var\\log\\kubelet\\kubelet.log \\"{1}\\" '
          '--windows-service {2}').format(runner, kubelet, flags)
    stored = bp.replace('\\"', '"')
    for argv in native_receives(['create', 'kubelet', 'binPath=', bp, 'start=', 'auto']):
        assert argv == ['create', 'kubelet', 'binPath=', stored, 'start=', 'auto'], \
            'sc.exe receives %r' % argv
    assert '%' not in stored, 'binPath would expand %'
    assert command_line_to_argv(stored) == [runner, '--log-file=C:\\var\\log\\kubelet\\kubelet.log',
                                            kubelet, '--windows-service'] + flags.split(' '), \
        'kube-log-runner receives %r' % command_line_to_argv(stored)


SINKS = [
    # name, template, kind ('s' string, 'l' list), check, needs PowerShell
    ('comment/toml', '# {{comment:v}}\nk = 1\n', 's', chk_comment_toml, False),
    ('comment/ini', '# {{comment:v}}\n[s]\nk = 1\n', 's', chk_comment_ini, False),
    ('comment/ps', '# {{comment:v}}\n$k = 1\n', 's', chk_comment_ps, True),
    ('toml', 'k = {{toml:v}}\n', 's', chk_toml, False),
    ('toml_lit', 'k = {{toml_lit:v}}\n', 's', chk_toml, False),
    ('ini', '[s]\nk={{ini:v}}\n', 's', chk_ini, False),
    ('json', '{"k": {{json:v}}}', 's', chk_json, False),
    ('xml', '<r a="{{xml:v}}">{{xml:v}}</r>', 's', chk_xml, False),
    ('ps', '$k = {{ps:v}}\n', 's', chk_ps, True),
    ('ps/list', '$k = {{ps:v}}\n', 'l', chk_ps, True),
    ('ps_here', "$k = @'\n{{ps_here:v}}\n'@\n", 's', chk_ps_here, True),
    ('ps_native', '$k = {{ps_native:v}}\n', 'l', chk_native, True),
    ('ps_msiprop', '$k = {{ps_msiprop:v}}\n', 'l', chk_msiprop, True),
    ('ps_path', '$k = {{ps_path:v}}\n', 'l', chk_path, True),
    ('ps_binpath', '$k = {{ps_binpath:v}}\n', 'l', chk_binpath, True),
    ('hcl', '{{hcl:v}}', 's', None, 'hcl'),
    ('hcl_in', '"pre-{{hcl_in:v}}-post"', 's', None, 'hcl'),
]

HCL_WRAP = {'hcl': ('', ''), 'hcl_in': ('pre-', '-post')}


def packer_values(exprs, tmpdir):
    """Packer's reading of each HCL expression in EXPRS (as locals), or
    None when the file does not parse."""
    path = os.path.join(tmpdir, 'fuzz.pkr.hcl')
    with open(path, 'w', encoding='utf-8') as f:
        f.write('locals {\n')
        for i, e in enumerate(exprs):
            f.write('  v%d = %s\n' % (i, e))
        f.write('}\n')
    q = 'jsonencode([%s])\n' % ', '.join('local.v%d' % i for i in range(len(exprs)))
    env = dict(os.environ, CHECKPOINT_DISABLE='1', HOME=tmpdir, PACKER_CONFIG_DIR=tmpdir)
    r = subprocess.run(['packer', 'console', path], input=q.encode(), capture_output=True,
                       env=env, cwd=tmpdir)
    out = r.stdout.decode('utf-8', errors='replace').strip()
    if r.returncode != 0 or not out.startswith('['):
        return None
    return json.loads(out)


def hexs(b):
    return b.hex() if b else '_'


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--seed', type=int, default=None)
    ap.add_argument('--count', type=int, default=300)
    ap.add_argument('--seconds', type=float, default=None)
    ap.add_argument('--oracle', default=os.path.join(ROOT, 'build', 'tests', 'render_oracle'))
    ap.add_argument('--min-accepted', type=int, default=1,
                    help='each sink must accept at least this many values')
    a = ap.parse_args()
    seed = a.seed if a.seed is not None else int(time.time())
    rng = random.Random(seed)
    if not os.access(a.oracle, os.X_OK):
        print('render_fuzz: no %s (make build/tests/render_oracle)' % a.oracle, file=sys.stderr)
        return 2
    if not shutil.which('packer'):
        print('render_fuzz: no packer: the hcl sinks are rendered but not parsed', file=sys.stderr)
    deadline = time.time() + a.seconds if a.seconds else None
    stats = {s[0]: [0, 0] for s in SINKS}
    total = 0
    rounds = 0
    while True:
        # one batch: every sink, BATCH values each
        batch = []
        for _ in range(300 if deadline else a.count):
            for s in SINKS:
                vals = list_value(rng, 1 if s[0] == 'ps_binpath' else 3) if s[2] == 'l' \
                    else [random_value(rng)]
                if s[0] == 'ps_msiprop' and rng.random() < 0.7:
                    vals = [rng.choice([b'LOGGINGSERIALPORTNAME=', b'USERNAME=', b'A.b_1='])
                            + v for v in vals]
                batch.append((s, vals))
        if rounds == 0:
            # every run also sees each special alone and between good
            # characters, in every sink (the known attacks included)
            for v in CORPUS:
                for s in SINKS:
                    pre = b'USERNAME=' if s[0] == 'ps_msiprop' else b''
                    batch.append((s, [pre + v]))
        lines = ''.join('%s %s %s\n' % (s[1].encode().hex(), s[2], ' '.join(hexs(v) for v in vals))
                        for s, vals in batch)
        r = subprocess.run([a.oracle], input=lines.encode(), capture_output=True)
        if r.returncode != 0:
            print('render_fuzz: oracle exited %d: %s' % (r.returncode, r.stderr.decode(errors='replace')))
            return 1
        outs = r.stdout.decode('ascii').splitlines()
        assert len(outs) == len(batch), 'oracle answered %d of %d' % (len(outs), len(batch))
        ps_jobs = []
        results = []
        for (s, vals), line in zip(batch, outs):
            ok, h = line.split(' ', 1) if ' ' in line else (line, '')
            out = bytes.fromhex(h) if h else b''
            if ok == 'NO':
                stats[s[0]][1] += 1
                results.append(None)
                continue
            try:
                text = out.decode('utf-8')
                svals = [v.decode('utf-8') for v in vals]
            except UnicodeDecodeError:
                return finding(seed, s, vals, out, 'accepted bytes that are not UTF-8')
            stats[s[0]][0] += 1
            results.append((text, svals))
            if s[4] is True:
                ps_jobs.append(len(results) - 1)
        hcl_jobs = [i for i, (s, _) in enumerate(batch) if s[4] == 'hcl' and results[i]]
        if hcl_jobs and shutil.which('packer'):
            import tempfile
            with tempfile.TemporaryDirectory() as td:
                got = packer_values([results[i][0] for i in hcl_jobs], td)
                if got is None:
                    # find the value that breaks the file
                    for i in hcl_jobs:
                        if packer_values([results[i][0]], td) is None:
                            return finding(seed, batch[i][0], batch[i][1], results[i][0].encode(),
                                           'packer cannot parse the HCL')
                    return finding(seed, batch[hcl_jobs[0]][0], [], b'', 'packer failed on the batch')
                for i, g in zip(hcl_jobs, got):
                    pre, post = HCL_WRAP[batch[i][0][0]]
                    if g != pre + results[i][1][0] + post:
                        return finding(seed, batch[i][0], batch[i][1], results[i][0].encode(),
                                       'packer reads %r' % g)
        ps_out = {}
        if ps_jobs:
            src = ''.join(json.dumps(results[i][0]) + '\n' for i in ps_jobs)
            p = subprocess.run(['node', os.path.join(HERE, 'psvalue.cjs')], input=src.encode(),
                               capture_output=True)
            if p.returncode != 0:
                print('render_fuzz: psvalue.cjs failed: %s' % p.stderr.decode(errors='replace'))
                return 2
            for i, l in zip(ps_jobs, p.stdout.decode().splitlines()):
                ps_out[i] = json.loads(l)
        for i, ((s, vals), res) in enumerate(zip(batch, results)):
            if res is None:
                continue
            text, svals = res
            if s[4] == 'hcl':
                continue
            try:
                if s[4]:
                    s[3](text, svals, ps_out[i])
                else:
                    s[3](text, svals)
            except Exception as ex:  # any parser error or mismatch is a finding
                return finding(seed, s, vals, text.encode(), '%s: %s' % (type(ex).__name__, ex))
        total += len(batch)
        rounds += 1
        if not deadline or time.time() >= deadline:
            break
    for name, (acc, ref) in stats.items():
        if acc < a.min_accepted:
            print('render_fuzz: sink %s accepted only %d values' % (name, acc))
            return 1
    print('render_fuzz: seed %d: %d values through %d sinks, no finding (%s)' % (
        seed, total, len(SINKS), ', '.join('%s %d/%d' % (n, s[0], s[0] + s[1])
                                          for n, s in stats.items())))
    return 0


def finding(seed, s, vals, out, why):
    print('render_fuzz: FINDING (seed %d) sink %s: %s' % (seed, s[0], why))
    print('  values (hex): %s' % ' '.join(v.hex() for v in vals))
    print('  output: %r' % out[:400])
    return 1


if __name__ == '__main__':
    sys.exit(main())
