#!/usr/bin/env python3
# @where the executable model of the Windows side (argv through PowerShell
#   5.1, sc.exe, kube-log-runner; config key tables; the 5.1 script lint) --
#   run by `tests/cli/node.bats`; config key tables in
#   `tests/node/keytables.py`
"""An executable model of what Windows does with winbuild's emitted node
scripts (issue 14, item 8): the argv each native program receives.

The command-line rules are those of tests/fuzz/render_fuzz.py (Windows
PowerShell 5.1 joining a native argument list, with and without its quote
tracking; CommandLineToArgvW / MSVCRT 2008 splitting, which Go's os.Args
follows too); this file adds Go's syscall.EscapeArg (how kube-log-runner,
a Go program, starts its child), the service manager's expansion of a
REG_EXPAND_SZ binPath, and the flag handling of C:\\k\\StartKubelet.ps1.

usage (tests/cli/node.bats):
  winnode.py service SCRIPTS_DIR TREE NAME [FLAGS_ENV]
  winnode.py kubelet-sc SCRIPTS_DIR TREE [FLAGS_ENV]
  winnode.py kubelet-nssm SCRIPTS_DIR TREE [FLAGS_ENV]
  winnode.py msiexec SCRIPTS_DIR
  winnode.py native SCRIPT...   (every Invoke-Native with a literal list)
print, one JSON array per line, the argv of each process in the chain, the
kubelet's last. Exit 1 with a message when a step does not hold.
"""
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), 'fuzz'))
from render_fuzz import command_line_to_argv, ps51_command_line  # noqa: E402

SYSTEMROOT = 'C:\\Windows'
COMPUTERNAME = 'WIN-NODE1'


class ModelError(Exception):
    pass


def receives(args):
    """argv after the program name, for ARGS handed over by Windows
    PowerShell 5.1; both 5.1 quoting models must agree."""
    a = command_line_to_argv(ps51_command_line(args, False))
    b = command_line_to_argv(ps51_command_line(args, True))
    if a != b:
        raise ModelError('the two PowerShell 5.1 models disagree: %r / %r' % (a, b))
    return a


def go_escape_arg(s):
    """Go's syscall.EscapeArg (os/exec on Windows builds the child's
    command line with it)."""
    if s == '':
        return '""'
    if not any(c in s for c in ' \t"'):
        return s
    out, slashes = ['"'], 0
    for c in s:
        if c == '\\':
            slashes += 1
        elif c == '"':
            out.append('\\' * (slashes + 1))
            slashes = 0
        else:
            slashes = 0
        out.append(c)
    out.append('\\' * slashes + '"')
    return ''.join(out)


def split_program(cmdline):
    """CreateProcess(NULL, cmdline): the program is the first token
    (quoted or up to a blank); the program's own argv follows the
    CommandLineToArgvW rules for the whole line."""
    return command_line_to_argv(cmdline)


def expand(s):
    """The service manager expands %VAR% in a REG_EXPAND_SZ ImagePath."""
    return re.sub(r'%SystemRoot%', lambda m: SYSTEMROOT, s, flags=re.I)


def ps_literal(src, var):
    """The value of `$VAR = '...'` (a single-quoted literal) in SRC."""
    m = re.search(r"^\$%s = '((?:[^']|'')*)'$" % re.escape(var), src, re.M)
    if not m:
        raise ModelError('no single-quoted $%s in the script' % var)
    return m.group(1).replace("''", "'")


def ps_string_list(src, var):
    """The single-quoted strings of `$VAR = @( ... )` in SRC (one line, or
    closed by a line holding only ')')."""
    m = re.search(r'^\$%s = @\((.*)\)$' % re.escape(var), src, re.M) or \
        re.search(r'^\$%s = @\((.*?)^\)' % re.escape(var), src, re.M | re.S)
    if not m:
        raise ModelError('no $%s = @(...) in the script' % var)
    body = '\n'.join(line.split('#', 1)[0] if line.strip().startswith('#') else line
                     for line in m.group(1).splitlines())
    return [t[1:-1].replace("''", "'") for t in re.findall(r"'(?:[^']|'')*'", body)]


def start_kubelet(script, flags_env):
    """The argv kubelet gets from StartKubelet.ps1: its $KubeletArgs, then
    KUBELET_KUBEADM_ARGS split at blanks (the host name is kubeadm's to set,
    D13), handed over by PowerShell 5.1 and split by kubelet (Go)."""
    if not re.search(r"^& \$Kubelet @KubeletArgs$", script, re.M):
        raise ModelError('StartKubelet.ps1 does not run & $Kubelet @KubeletArgs')
    if 'hostname' in re.sub(r'(?m)^\s*#.*$', '', script).lower():
        raise ModelError('StartKubelet.ps1 sets the host name; the model (kubeadm decides, D13) does not')
    if not re.search(r"Test-Path -LiteralPath \$FlagsFile", script) or \
            ps_literal(script, 'FlagsFile') != 'C:\\var\\lib\\kubelet\\kubeadm-flags.env':
        raise ModelError('StartKubelet.ps1 does not read kubeadm-flags.env')
    args = ps_string_list(script, 'KubeletArgs')
    if flags_env is not None:
        for line in flags_env.splitlines():
            m = re.match(r'^\s*KUBELET_KUBEADM_ARGS\s*=\s*(.*?)\s*$', line)
            if m:
                v = m.group(1)
                if len(v) >= 2 and v[0] == '"' and v[-1] == '"':
                    v = v[1:-1]
                args += [a for a in re.split(r'\s+', v) if a]
    return [ps_literal(script, 'Kubelet')] + receives(args)


def manifest_path(tree, winpath):
    if not winpath.lower().startswith('c:\\'):
        raise ModelError('not on C: %r' % winpath)
    return os.path.join(tree, winpath[3:].replace('\\', '/'))


class PsParser:
    """The PowerShell literals winbuild's ps sink writes (lib/tmpl.c):
    'single-quoted', integers, @(a, b) and @{ Key = v; ... }."""

    def __init__(self, text):
        self.s, self.i = text, 0

    def ws(self):
        while self.i < len(self.s) and self.s[self.i] in ' \t':
            self.i += 1

    def eat(self, tok):
        self.ws()
        if not self.s.startswith(tok, self.i):
            raise ModelError('PowerShell literal: expected %r at %r' % (tok, self.s[self.i:self.i + 30]))
        self.i += len(tok)

    def value(self):
        self.ws()
        c = self.s[self.i:self.i + 2]
        if c == '@(':
            self.i += 2
            out = []
            self.ws()
            while self.s[self.i] != ')':
                out.append(self.value())
                self.ws()
                if self.s[self.i] == ',':
                    self.i += 1
                    self.ws()
            self.i += 1
            return out
        if c == '@{':
            self.i += 2
            out = {}
            self.ws()
            while self.s[self.i] != '}':
                m = re.match(r'[A-Za-z0-9_]+', self.s[self.i:])
                if not m:
                    raise ModelError('PowerShell literal: bad key at %r' % self.s[self.i:self.i + 30])
                self.i += m.end()
                self.eat('=')
                out[m.group(0)] = self.value()
                self.ws()
                if self.s[self.i] == ';':
                    self.i += 1
                    self.ws()
            self.i += 1
            return out
        if self.s[self.i] == "'":
            m = re.match(r"'((?:[^']|'')*)'", self.s[self.i:])
            self.i += m.end()
            return m.group(1).replace("''", "'")
        m = re.match(r'-?[0-9]+', self.s[self.i:])
        if not m:
            raise ModelError('PowerShell literal: unexpected %r' % self.s[self.i:self.i + 30])
        self.i += m.end()
        return int(m.group(0))


def services(scripts):
    """The service records of 05-services.ps1 ($Services = @(@{...}, ...)),
    by name, and the script's source."""
    src = open(os.path.join(scripts, '05-services.ps1'), encoding='utf-8').read()
    m = re.search(r'^\$Services = (.*)$', src, re.M)
    if not m:
        raise ModelError('05-services.ps1: no $Services')
    recs = PsParser(m.group(1)).value()
    return {r['Name']: r for r in recs}, src


SC_CALL = ("$scArgs = @($verb, $name, 'binPath=', $svc.BinPath.Replace('\"', '\\\"'), "
           "'start=', 'auto')")
SC_DEPEND = "$scArgs += @('depend=', ($svc.DependOn -join '/'))"
NSSM_PARAMS = "$settings += , @('AppParameters', $svc.AppParameters.Replace('\"', '\\\"'))"


def sc_service(rec, src, tree, flags_env):
    """sc.exe create/config NAME binPath= ... start= auto [depend= a/b]: what
    sc.exe receives, what the service manager starts, and down the chain
    (kube-log-runner (Go) -> its child; powershell.exe -File a start script
    -> kubelet) to the program."""
    if SC_CALL not in src or SC_DEPEND not in src:
        raise ModelError('05-services.ps1: the sc.exe call changed; update the model')
    stored, name = rec['BinPath'], rec['Name']
    deps = rec['DependOn']
    for verb in ('config', 'create'):
        args = [verb, name, 'binPath=', stored.replace('"', '\\"'), 'start=', 'auto']
        want = [verb, name, 'binPath=', stored, 'start=', 'auto']
        if deps:
            args += ['depend=', '/'.join(deps)]
            want += ['depend=', '/'.join(deps)]
        sc = receives(args)
        if sc != want:
            raise ModelError('sc.exe receives %r' % sc)
    chain = [['sc.exe'] + sc]
    prog = split_program(expand(stored))
    chain.append(prog)
    if prog[0].lower().endswith('\\kube-log-runner.exe'):
        # kube-log-runner: its own flags, then the command it runs
        i = 1
        while i < len(prog) and prog[i].startswith('-'):
            i += 1
        prog = split_program(' '.join(go_escape_arg(a) for a in prog[i:]))
        chain.append(prog)
    if prog[0].lower().endswith('\\powershell.exe'):
        chain.append(powershell_file(prog, tree, flags_env))
    return chain


def nssm_service(rec, src, tree, flags_env):
    """nssm set NAME AppParameters ...: what nssm receives, then what it
    starts (Application, then AppParameters as its command line)."""
    if NSSM_PARAMS not in src or \
            "$app = [Environment]::ExpandEnvironmentVariables($svc.Application)" not in src:
        raise ModelError('05-services.ps1: the nssm calls changed; update the model')
    app = expand(rec['Application'])
    chain = []
    params = []
    if rec['AppParameters']:
        nssm = receives(['set', rec['Name'], 'AppParameters',
                         rec['AppParameters'].replace('"', '\\"')])
        if nssm[:3] != ['set', rec['Name'], 'AppParameters'] or len(nssm) != 4:
            raise ModelError('nssm.exe receives %r' % nssm)
        chain.append(['nssm.exe'] + nssm)
        params = command_line_to_argv(nssm[3])
    prog = [app] + params
    chain.append(prog)
    if app.lower().endswith('\\powershell.exe'):
        chain.append(powershell_file(prog, tree, flags_env))
    return chain


def service(scripts, tree, name, flags_env, manager=None):
    recs, src = services(scripts)
    if name not in recs:
        raise ModelError('05-services.ps1 registers no service %r (it has %s)' %
                         (name, ', '.join(sorted(recs))))
    rec = recs[name]
    if manager and rec['Manager'] != manager:
        raise ModelError('service %s is under %s, not %s' % (name, rec['Manager'], manager))
    for f in rec['Files']:
        if not os.path.isfile(manifest_path(tree, f)):
            raise ModelError('service %s: %s is not in the staged tree' % (name, f))
    fn = nssm_service if rec['Manager'] == 'nssm' else sc_service
    return fn(rec, src, tree, flags_env)


def kubelet_sc(scripts, tree, flags_env):
    return service(scripts, tree, 'kubelet', flags_env, 'sc')


def powershell_file(ps, tree, flags_env):
    if not ps[0].lower().endswith('\\powershell.exe'):
        raise ModelError('not powershell.exe: %r' % ps)
    lower = [a.lower() for a in ps]
    if '-file' not in lower:
        raise ModelError('powershell.exe without -File: %r' % ps)
    script = ps[lower.index('-file') + 1]
    p = manifest_path(tree, script)
    if not os.path.isfile(p):
        raise ModelError('powershell.exe -File %s: not in the staged tree' % script)
    return start_kubelet(open(p, encoding='utf-8').read(), flags_env)


def kubelet_nssm(scripts, tree, flags_env):
    return service(scripts, tree, 'kubelet', flags_env, 'nssm')


def ps_literal_list(expr):
    """The strings of a literal @('a', 'b') (single-quoted only), or None."""
    m = re.fullmatch(r"@\((\s*'(?:[^']|'')*'\s*(?:,\s*'(?:[^']|'')*'\s*)*)\)", expr.strip())
    if not m:
        return None
    return [t[1:-1].replace("''", "'") for t in re.findall(r"'(?:[^']|'')*'", m.group(1))]


def native_literals(paths):
    """Every Invoke-Native call with a literal argument list: the program
    must receive exactly those arguments."""
    out = []
    for path in paths:
        for line in open(path, encoding='utf-8'):
            m = re.search(r'Invoke-Native -FilePath (\S+) -ArgumentList (@\(.*?\))(?: -Ok|$)',
                          line.strip())
            if not m:
                continue
            args = ps_literal_list(m.group(2))
            if args is None:
                continue
            got = receives(args)
            if got != args:
                raise ModelError('%s: %s receives %r, not %r' % (path, m.group(1), got, args))
            out.append([m.group(1)] + got)
    return out


def msiexec(scripts):
    """The argv msiexec gets from 03-cloudbase-init.ps1 (msiexec splits its
    command line itself; modelled with the CommandLineToArgvW rules)."""
    src = open(os.path.join(scripts, '03-cloudbase-init.ps1'), encoding='utf-8').read()
    msi = ps_literal(src, 'Msi')
    winbuild_dir = ps_literal(src, 'WinbuildDir')
    m = re.search(r'^\$Properties = (.*)$', src, re.M)
    props = ps_literal_list(m.group(1)) if m else None
    if props is None:
        props = [] if m and m.group(1).strip() == '@()' else None
    if props is None:
        raise ModelError('03-cloudbase-init.ps1: $Properties is not a literal list')
    if "$msiArgs = @('/i', $Msi, '/qn', '/norestart', '/l*v', $log) + $Properties" not in src or \
            "$log = Join-Path $WinbuildDir 'cloudbase-init-install.log'" not in src:
        raise ModelError('03-cloudbase-init.ps1: the msiexec call changed; update the model')
    args = ['/i', msi, '/qn', '/norestart', '/l*v',
            winbuild_dir + '\\cloudbase-init-install.log'] + props
    got = receives(args)
    if got != args:
        raise ModelError('msiexec receives %r, not %r' % (got, args))
    return [['msiexec.exe'] + got]


def main():
    if len(sys.argv) >= 3 and sys.argv[1] in ('native', 'msiexec'):
        try:
            res = native_literals(sys.argv[2:]) if sys.argv[1] == 'native' else msiexec(sys.argv[2])
            for argv in res:
                print(json.dumps(argv))
        except (ModelError, OSError) as e:
            print('winnode: %s' % e, file=sys.stderr)
            return 1
        return 0
    if sys.argv[1:2] == ['service'] and len(sys.argv) in (5, 6):
        flags = open(sys.argv[5], encoding='utf-8').read() if len(sys.argv) == 6 else None
        try:
            for argv in service(sys.argv[2], sys.argv[3], sys.argv[4], flags):
                print(json.dumps(argv))
        except (ModelError, OSError) as e:
            print('winnode: %s' % e, file=sys.stderr)
            return 1
        return 0
    if len(sys.argv) not in (4, 5) or sys.argv[1] not in ('kubelet-sc', 'kubelet-nssm'):
        print(__doc__, file=sys.stderr)
        return 2
    flags = open(sys.argv[4], encoding='utf-8').read() if len(sys.argv) == 5 else None
    fn = kubelet_sc if sys.argv[1] == 'kubelet-sc' else kubelet_nssm
    try:
        for argv in fn(sys.argv[2], sys.argv[3], flags):
            print(json.dumps(argv))
    except (ModelError, OSError) as e:
        print('winnode: %s' % e, file=sys.stderr)
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
