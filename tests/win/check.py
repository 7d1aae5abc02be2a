#!/usr/bin/env python3
"""The end state of a simulated build (tests/win/packer.ps1), held against
the recipe and the argv model (docs/node.md, "The engine tier").

usage: check.py PLAN_JSON OUT_DIR SIM_DIR BUILDER PASSES
  PLAN_JSON  `winbuild plan --json` of the recipe (the resolved recipe)
  OUT_DIR    the build's output (manifest.json, packer/scripts)
  SIM_DIR    the builder's simulated machine (pass<N>.json, arglog.jsonl)
Prints one line per failed check and exits 1, or prints a summary line.

Two oracles for the argv: every native call's values (what PowerShell handed
over, logged by sim.ps1) through tests/node/winnode.py's model of Windows
PowerShell 5.1 and CommandLineToArgvW must equal the argv the fake program
received from pwsh 7.6 in Legacy mode; and the sc.exe/nssm.exe/msiexec
calls must equal what winnode.py computes from the emitted scripts alone.
"""
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), 'node'))
import winnode  # noqa: E402
sys.path.insert(0, HERE)
import fakewin  # noqa: E402  (the line cloudbase-init's SetSetupComplete.cmd writes)

try:
    import yaml
except ImportError:  # python3-yaml is a Debian dependency (.ci/deps)
    yaml = None

CLOUDBASE = 'C:\\Program Files\\Cloudbase Solutions\\Cloudbase-Init'
ENV_KEY = 'hklm:\\system\\currentcontrolset\\control\\session manager\\environment'
POWERSHELL = '%SystemRoot%\\System32\\WindowsPowerShell\\v1.0\\powershell.exe'
PROVIDER = {'azure-arm': 'azure', 'amazon-ebs': 'aws', 'vsphere-iso': 'vsphere',
            'qemu': 'nocloud', 'hyperv-iso': 'nocloud', 'oracle-oci': 'openstack'}
PLATFORM = {'azure-arm': 'azure', 'amazon-ebs': 'aws', 'oracle-oci': 'oci'}
ISO_SYSPREP = ['/generalize', '/oobe', '/mode:vm', '/quiet',
               '/unattend:' + CLOUDBASE + '\\conf\\Unattend.xml', '/quit']
# issue 40: the ISO path powers off itself once the image is generalized
ISO_SHUTDOWN = ['/s', '/t', '10', '/f', '/d', 'p:4:1', '/c', 'winbuild-sysprep']
AZURE_SYSPREP = ['/generalize', '/oobe', '/quiet', '/quit', '/mode:vm',
                 '/unattend:' + CLOUDBASE + '\\conf\\Unattend.xml']
# image-builder packer/oci/scripts/sysprep.ps1: cloudbase-init's Unattend.xml, /quit
OCI_SYSPREP = ['/generalize', '/oobe', '/mode:vm', '/quiet', '/quit',
               '/unattend:' + CLOUDBASE + '\\conf\\Unattend.xml']
WIRESERVER_RULE = 'winbuild-block-wireserver-cve-2021-27075'


class Checks:
    def __init__(self, label):
        self.label = label
        self.bad = []
        self.n = 0

    def eq(self, what, got, want):
        self.n += 1
        if got != want:
            self.bad.append('%s: %s: got %r, want %r' % (self.label, what, got, want))

    def true(self, what, cond):
        self.n += 1
        if not cond:
            self.bad.append('%s: %s' % (self.label, what))


def win_quote(a):
    """An argument in a Windows command line as winbuild writes one
    (docs/node.md): quoted when it holds a blank."""
    return '"%s"' % a if (' ' in a or '\t' in a) else a


def reg(st, key, name):
    k = st['registry'].get(key.lower())
    if k is None:
        return None
    return k['values'].get(name.lower())


def main():
    plan_file, out, sim, builder, passes = sys.argv[1:6]
    passes = int(passes)
    plan = json.load(open(plan_file, encoding='utf-8'))
    manifest = json.load(open(os.path.join(out, 'manifest.json'), encoding='utf-8'))
    scripts = os.path.join(out, 'packer', 'scripts')
    c = Checks(builder)
    snaps = [json.load(open(os.path.join(sim, 'pass%d.json' % i), encoding='utf-8'))
             for i in range(1, passes + 1)]
    last = snaps[-1]
    st, files = last['state'], last['files']
    # the node's first boot after the build (packer.ps1 runs the startup
    # tasks): what WinRM and the firewall look like on a node
    fb_path = os.path.join(sim, 'firstboot.json')
    fb = json.load(open(fb_path, encoding='utf-8')) if os.path.isfile(fb_path) else None
    node_st = fb['state'] if fb else st
    # (a kept machine, build-sim -k, is an earlier build's node: its
    # services and its first boot's WinRM are that build's)
    kept = os.path.isfile(os.path.join(sim, 'events-before'))
    winver = plan['image']['windows_version']

    # a retried build changes nothing
    for i in range(1, passes):
        a, b = snaps[0]['stable'], snaps[i]['stable']
        for k in sorted(set(a) | set(b)):
            if a.get(k) != b.get(k):
                if k == 'files':
                    diff = sorted(p for p in set(a[k]) | set(b[k]) if a[k].get(p) != b[k].get(p))
                    c.true('pass %d changed files: %s' % (i + 1, ', '.join(diff[:8])), False)
                else:
                    c.true('pass %d changed %s: %s -> %s' % (i + 1, k, json.dumps(a.get(k))[:600], json.dumps(b.get(k))[:600]), False)

    # every file the node keeps in place with its SHA-256, and writable
    # (D12: the CD's ReadOnly attribute does not travel with the copy);
    # every build-only file ("lifetime": "build", docs/manifest.md: image
    # tars, update packages, windowsPE folders, and D24's cloudbase-init
    # MSI and conf pairs) gone, removed by the step that used it
    for f in manifest['files']:
        if f['lifetime'] == 'build':
            c.eq('build-only file %s left in the image' % f['path'], files.get(f['path']), None)
            continue
        c.eq('file %s' % f['path'], files.get(f['path']), f['sha256'])
        hp = os.path.join(sim, 'C', *f['path'][3:].split('\\'))
        if os.path.isfile(hp):
            c.true('file %s is read-only' % f['path'], os.stat(hp).st_mode & 0o200)
    for d in manifest.get('directories', []):
        c.true('directory %s missing' % d, any(p.lower().startswith(d.lower() + '\\') for p in files)
               or os.path.isdir(os.path.join(sim, 'C', *d[3:].split('\\'))))
    c.true('payload archive left behind', 'C:\\Windows\\Temp\\winbuild-payload.zip' not in files)
    c.true('payload staging left behind',
           not any(p.startswith('C:\\Windows\\Temp\\winbuild-payload\\') for p in files))
    for name in ('manifest.json', 'provenance.json'):
        c.true('C:\\ProgramData\\winbuild\\%s missing' % name,
               'C:\\ProgramData\\winbuild\\' + name in files)

    # features: Windows features and the Hyper-V role (dism)
    feats = winnode.ps_literal_list(re.search(r'^\$Features = (.*)$', open(
        os.path.join(scripts, '01-windows-features.ps1'), encoding='utf-8').read(), re.M).group(1))
    c.true('no Windows features declared', feats is not None and len(feats) > 0)
    for f in feats or []:
        c.eq('feature %s installed' % f, st['features'].get(f, {}).get('installed'), True)
    c.eq('dism Microsoft-Hyper-V', st['dism'].get('Microsoft-Hyper-V'), 'enabled')
    # D5: the Hyper-V PowerShell module, whatever the recipe's feature list
    c.eq('feature Hyper-V-PowerShell installed', st['features'].get('Hyper-V-PowerShell', {}).get('installed'), True)

    # registry values (image-builder's systemprep, docs/node.md "Node settings")
    hns = 'HKLM:\\SYSTEM\\CurrentControlSet\\Services\\hns\\State'
    au = 'HKLM:\\SOFTWARE\\Policies\\Microsoft\\Windows\\WindowsUpdate\\AU'
    want = [(hns, 'EnableCompartmentNamespace', 1),
            # D11: Windows Update notifies only (image-builder systemprep)
            (au, 'NoAutoUpdate', 1), (au, 'AUOptions', 2)]
    if winver == '2019':
        want += [(hns, 'HNSControlFlag', 0x50),
                 ('HKLM:\\SYSTEM\\CurrentControlSet\\Services\\wcifs', 'WcifsSOPCountDisabled', 0)]
    ovr = 'HKLM:\\SYSTEM\\CurrentControlSet\\Policies\\Microsoft\\FeatureManagement\\Overrides'
    if winver == '2022':
        want.append((ovr, '1114842764', 0))
    if winver == '2025':
        want.append((ovr, '520997518', 1))
    for key, name, value in want:
        c.eq('registry %s\\%s' % (key, name), reg(st, key, name), {'name': name, 'type': 'DWord', 'value': value})
    for key in (ovr,):
        vals = st['registry'].get(key.lower(), {'values': {}})['values']
        c.eq('FeatureManagement overrides', sorted(v['name'] for v in vals.values()),
             sorted(n for k, n, _ in want if k == ovr))
    netsh = [x['argv'] for x in st['calls'] if x['prog'].lower().endswith('\\netsh.exe')]
    for proto in ('tcp', 'udp'):
        c.true('netsh dynamicport %s not set' % proto,
               ['int', 'ipv4', 'set', 'dynamicport', proto, 'start=34000', 'num=31536'] in netsh)

    # machine PATH: REG_EXPAND_SZ, the original %SystemRoot% entries, each entry once
    path = st['registry'].get(ENV_KEY, {'values': {}})['values'].get('path')
    c.true('machine PATH missing', path is not None)
    if path:
        c.eq('machine PATH type', path['type'], 'ExpandString')
        parts = path['value'].split(';')
        c.true('machine PATH lost %%SystemRoot%%\\system32: %r' % path['value'], '%SystemRoot%\\system32' in parts)
        for comp in plan['components']:
            for e in comp['path']:
                c.eq('PATH entry %s' % e, parts.count(e), 1)

    # Defender exclusions, firewall rules, directories
    want_ex = [e for comp in plan['components'] for e in comp['defender_exclusions']]
    c.eq('Defender exclusions', sorted(st['defender']['ExclusionPath']), sorted(set(want_ex)))
    want_fw = {}
    for comp in plan['components']:
        for r in comp['firewall']:
            name = 'winbuild-%s-%s-%s' % (r['name'], r['protocol'], r['port'])
            want_fw[name] = (r['protocol'], [str(r['port'])])
    # (the answer file's WinRM rules must be gone: they fail this check)
    inbound = {n: r for n, r in node_st['firewall'].items() if n != WIRESERVER_RULE}
    got_fw = {n: (r['Protocol'], r['LocalPort']) for n, r in inbound.items()}
    c.eq('firewall rules', got_fw, want_fw)
    for n, r in inbound.items():
        c.eq('firewall %s direction/action' % n, (r['Direction'], r['Action'], r['Enabled']), ('Inbound', 'Allow', 'True'))
    for comp in plan['components']:
        for d in comp['directories']:
            c.true('directory %s missing' % d, os.path.isdir(os.path.join(sim, 'C', *d[3:].split('\\'))))
    # admin_directories: nothing inherited, and no principal but SYSTEM and
    # Administrators may write (Win32-OpenSSH's rule for its folders)
    writers = {'S-1-5-18', 'S-1-5-32-544'}
    for comp in plan['components']:
        for d in comp.get('admin_directories', []):
            c.true('directory %s missing' % d, os.path.isdir(os.path.join(sim, 'C', *d[3:].split('\\'))))
            acl = st.get('acls', {}).get(d.lower())
            c.true('%s: no ACL set' % d, acl is not None)
            if acl is None:
                continue
            c.eq('%s inheritance' % d, acl['inheritance'], 'r')
            for who, perm in acl['grants'].items():
                if who not in writers:
                    c.true('%s: %s may write (%s)' % (d, who, perm), perm.split(')')[-1] in ('RX', 'R'))
            c.eq('%s writers' % d, sorted(w for w, p in acl['grants'].items() if p.endswith('F')), sorted(writers))
    # registry values the components set
    kinds = {'string': 'String', 'expand_string': 'ExpandString', 'dword': 'DWord', 'binary': 'Binary'}
    for comp in plan['components']:
        for r in comp.get('registry', []):
            got = reg(st, r['key'], r['name'])
            want_v = int(r['value']) if r['type'] == 'dword' else r['value']
            got_v = None if got is None else got['value']
            if got is not None and got['type'] == 'DWord':
                got_v &= 0xffffffff    # the Int32 read back, as the REG_DWORD's 32 bits
            c.eq('registry %s %s' % (r['key'], r['name']),
                 None if got is None else (got['type'], got_v), (kinds[r['type']], want_v))
    # a key taken for a write has its owner and access back: TrustedInstaller
    # owns CCG's COMClasses, Administrators only read it
    ccg = st.get('registry_acl', {}).get('hklm:\\system\\currentcontrolset\\control\\ccg\\comclasses')
    c.eq('COMClasses owner and Administrators\' access', ccg and (ccg['owner'], ccg['admins']),
         ('TrustedInstaller', 'read'))
    # event manifests: each installed, from where the component put it
    want_mans = sorted(m.lower() for comp in plan['components'] for m in comp.get('event_manifests', []))
    c.eq('event manifests installed', sorted(st.get('event_manifests', {})), want_mans)

    # services: exact binPath or nssm settings, start type, dependencies, recovery
    recs, _ = winnode.services(scripts)
    nssm_exe = next((f['path'] for f in manifest['files'] if f['path'].lower().endswith('\\win64\\nssm.exe')), None)
    for svc in plan['services']:
        name = svc['name']
        got = st['services'].get(name.lower())
        c.true('service %s not registered' % name, got is not None)
        if got is None:
            continue
        decl = {}
        if yaml is not None:
            path, line = svc['origin'].rsplit(':', 2)[0], None
            comp = yaml.safe_load(open(path, encoding='utf-8'))
            decl = next((s for s in comp.get('services', []) if s['name'] == name), {})
        manager = svc['manager']
        c.eq('service %s start' % name, got['start'], 'auto')
        c.eq('service %s dependencies' % name, got['depend'], svc['depends_on'])
        c.eq('service %s manager' % name, got['manager'], manager)
        wrapper = decl.get('wrapper')
        if manager == 'sc':
            if decl.get('log_runner'):
                want_bin = '"%s" --log-file=%s %s"%s" -NoProfile -NonInteractive -ExecutionPolicy Bypass -File "%s"' % (
                    decl['log_runner'], decl['log_file'],
                    ''.join(a + ' ' for a in decl.get('log_runner_args', [])), POWERSHELL, wrapper)
            else:
                want_bin = ' '.join(['"%s"' % svc['binary']] + [win_quote(a) for a in svc['sc_args'] + svc['args']])
            c.eq('service %s binPath' % name, got['binPath'], want_bin)
            c.eq('service %s binPath (model)' % name, got['binPath'], recs[name]['BinPath'])
            c.eq('service %s failure actions' % name, got['failure'], {'reset': '0', 'actions': 'restart/10000'})
        else:
            c.eq('service %s binPath' % name, got['binPath'], nssm_exe)
            rec = recs[name]
            n = got['nssm']
            if wrapper:
                c.eq('service %s nssm Application' % name, n.get('Application'), winnode.expand(POWERSHELL))
                c.eq('service %s nssm AppParameters' % name, n.get('AppParameters'),
                     '-NoProfile -NonInteractive -ExecutionPolicy Bypass -File "%s"' % wrapper)
            else:
                c.eq('service %s nssm Application' % name, n.get('Application'), svc['binary'])
                c.eq('service %s nssm AppParameters' % name, n.get('AppParameters'),
                     ' '.join(win_quote(a) for a in svc['args']) or None)
            c.eq('service %s nssm AppDirectory' % name, n.get('AppDirectory'), rec['AppDirectory'])
            if rec['AppStdout']:
                c.eq('service %s nssm AppStdout' % name, n.get('AppStdout'), rec['AppStdout'])
                c.eq('service %s nssm AppStderr' % name, n.get('AppStderr'), rec['AppStderr'])
            for k, v in (('AppRotateFiles', '1'), ('AppRotateOnline', '1'), ('AppRotateBytes', '10485760')):
                c.eq('service %s nssm %s' % (name, k), n.get(k), v)
        c.eq('service %s status after the restart' % name, got['status'],
             'Running' if st['restarts'] > 0 and False else got['status'])
    declared = {s['name'].lower() for s in plan['services']}
    for k, s in st['services'].items():
        if k not in declared and s['manager'] == 'nssm':
            c.true('service %s registered by nssm but not declared' % s['name'], False)

    # cloudbase-init: the conf pair of this builder's provider, laid once
    prov = PROVIDER[builder]
    for conf in ('cloudbase-init.conf', 'cloudbase-init-unattend.conf'):
        staged = next((f['sha256'] for f in manifest['files']
                       if f['path'].lower() == ('C:\\ProgramData\\winbuild\\cloudbase-init\\%s\\%s' % (prov, conf)).lower()), None)
        c.true('no staged %s for provider %s' % (conf, prov), staged is not None)
        c.eq('cloudbase-init %s (%s)' % (conf, prov), files.get(CLOUDBASE + '\\conf\\' + conf), staged)
    sc_path = os.path.join(sim, 'C', 'Windows', 'Setup', 'Scripts', 'SetupComplete.cmd')
    c.true('SetupComplete.cmd missing', os.path.isfile(sc_path))
    if os.path.isfile(sc_path):
        # cloudbase-init's own line, alone: it makes the service auto and
        # starts it at first boot (fakewin.py SETUPCOMPLETE_LINE)
        c.eq('SetupComplete.cmd', open(sc_path, encoding='ascii').read().splitlines(),
             [fakewin.SETUPCOMPLETE_LINE])
    c.true('cloudbase-init service missing', 'cloudbase-init' in st['services'])
    if 'cloudbase-init' in st['services']:
        # demand until that first boot: no build restart starts it
        c.eq('cloudbase-init start (until SetupComplete.cmd)', st['services']['cloudbase-init']['start'], 'demand')
    msi = [x for x in st['calls'] if x['prog'].lower().endswith('\\msiexec.exe')]
    c.eq('msiexec argv (model)', [x['argv'] for x in msi[-1:]], [m[1:] for m in winnode.msiexec(scripts)])

    # sysprep's command line per platform
    platform = PLATFORM.get(builder, 'iso')
    # D19, issue 40: WinRM as Packer reached it until the end of the build
    # (Basic, the HTTPS listener: nothing Packer runs turns them off), then
    # on the node's first boot back to Windows' own state: no Basic, no
    # HTTPS listener nor its certificate, no rule of the bootstrap (the
    # firewall check above), no LocalAccountTokenFilterPolicy (ISO), and
    # the task and its script gone. azure-arm: Azure's own WinRM, no task.
    task = 'winbuild-firstboot-winrm'
    signed = any('execution_policy = "allsigned"' in open(os.path.join(out, 'packer', f), encoding='utf-8').read()
                 for f in os.listdir(os.path.join(out, 'packer')) if f.endswith('.pkr.hcl'))
    fb_script = 'C:\\ProgramData\\winbuild\\firstboot-winrm.ps1'
    if platform == 'azure':
        c.eq('first-boot tasks on azure-arm', sorted(st.get('tasks', {})), [])
    else:
        if not kept:
            c.eq('WinRM Basic at the end of the build', st['winrm']['basic'], platform != 'oci')
            c.true('WinRM HTTPS listener gone during the build',
                   ['Transport=HTTPS', 'Address=*'] in list(st['winrm']['listeners'].values()))
        t = st.get('tasks', {}).get(task)
        c.true('no first-boot task %s' % task, t is not None)
        if t:
            c.eq('first-boot task', (t['schedule'], t['run_as']), ('ONSTART', 'SYSTEM'))
            c.eq('first-boot task command', t['run'],
                 'powershell.exe -NoProfile -NonInteractive -ExecutionPolicy %s -File %s -Platform %s' % (
                     'AllSigned' if signed else 'Bypass', fb_script,
                     {'iso': 'iso', 'aws': 'aws', 'oci': 'oci'}[platform]))
        c.true('no first boot ran (firstboot.json)', fb is not None)
        if fb:
            w = fb['state']['winrm']
            c.eq('node: WinRM Basic authentication', w['basic'], False)
            c.eq('node: WinRM listeners', sorted(tuple(v) for v in w['listeners'].values()),
                 [('Transport=HTTP', 'Address=*')])
            c.eq('node: certificates', fb['state'].get('certificates'), [])
            c.eq('node: first-boot task', sorted(fb['state'].get('tasks', {})), [])
            c.true('node: %s left' % fb_script, fb_script not in fb['files'])
            pol = reg(fb['state'], 'HKLM:\\SOFTWARE\\Microsoft\\Windows\\CurrentVersion\\Policies\\System',
                      'LocalAccountTokenFilterPolicy')
            c.eq('node: LocalAccountTokenFilterPolicy', pol, None)
    if platform == 'iso':
        c.eq('sysprep', st.get('sysprep'), ISO_SYSPREP)
        c.true('administrator password not replaced', os.path.isfile(os.path.join(sim, 'adsi.log')))
        wl = 'HKLM:\\SOFTWARE\\Microsoft\\Windows NT\\CurrentVersion\\Winlogon'
        c.eq('AutoAdminLogon', (reg(st, wl, 'AutoAdminLogon') or {}).get('value'), '0')
        c.eq('DefaultPassword', reg(st, wl, 'DefaultPassword'), None)
        c.eq('AutoLogonCount', reg(st, wl, 'AutoLogonCount'), None)
        c.eq('ImageState', (reg(st, 'HKLM:\\SOFTWARE\\Microsoft\\Windows\\CurrentVersion\\Setup\\State', 'ImageState') or {}).get('value'),
             'IMAGE_STATE_GENERALIZE_RESEAL_TO_OOBE')
        c.eq('shutdown.exe', st.get('shutdown'), ISO_SHUTDOWN)
        c.eq('power', st['power'], 'off')
        c.true('WireServer rule outside Azure', WIRESERVER_RULE not in st['firewall'])
        c.true('sysprep.ps1 left in the image', 'C:\\ProgramData\\winbuild\\sysprep.ps1' not in files)
    elif platform == 'azure':
        c.eq('sysprep', st.get('sysprep'), AZURE_SYSPREP)
        # D8: image-builder's fix for OSProvisioningTimedOut (sysprep.ps1,
        # commit 00da1b465) and the WireServer block (CVE-2021-27075,
        # roles/providers/tasks/azure.yml)
        c.eq('built-in Administrator enabled', st['users']['administrator']['Enabled'], False)
        c.eq('net accounts /maxpwage', st['accounts']['maxpwage'], 'unlimited')
        ws = st['firewall'].get(WIRESERVER_RULE)
        c.true('no WireServer block rule', ws is not None)
        group = st['groups'].get('wireserveraccess')
        c.true('no WireServerAccess group', group is not None)
        if ws and group:
            c.eq('WireServer rule', (ws['Direction'], ws['Action'], ws['Protocol'], ws['RemoteAddress'], ws['RemotePort'], ws['Enabled']),
                 ('Outbound', 'Block', 'TCP', ['168.63.129.16'], ['80'], 'True'))
            c.eq('WireServer rule exceptions', ws['LocalUser'],
                 'O:LSD:(D;;CC;;;S-1-5-18)(D;;CC;;;%s)(A;;CC;;;S-1-1-0)' % group['SID'])
        c.eq('ImageState', (reg(st, 'HKLM:\\SOFTWARE\\Microsoft\\Windows\\CurrentVersion\\Setup\\State', 'ImageState') or {}).get('value'),
             'IMAGE_STATE_GENERALIZE_RESEAL_TO_OOBE')
        c.true('Panther\\unattend.xml left behind', 'C:\\Windows\\Panther\\unattend.xml' not in files)
    elif platform == 'oci':
        c.eq('sysprep', st.get('sysprep'), OCI_SYSPREP)
        c.eq('ImageState', (reg(st, 'HKLM:\\SOFTWARE\\Microsoft\\Windows\\CurrentVersion\\Setup\\State', 'ImageState') or {}).get('value'),
             'IMAGE_STATE_GENERALIZE_RESEAL_TO_OOBE')
        # OCI images the instance itself: the VM stays on for it
        c.eq('power', st['power'], 'on')
    else:
        c.eq('sysprep', st.get('sysprep'), ['ec2launch', 'sysprep', '--shutdown'])
        c.eq('power', st['power'], 'off')

    # container images (issue 33): each planned image imported into
    # containerd's k8s.io namespace under its name, at the digest of its
    # pin's manifest for this Windows build (manifest.json's images[].
    # manifest_digest: the tar's index.json names that manifest, issue 40),
    # staged for the planned pin; none, and no import step, without images
    images = plan.get('images', [])
    staged = {i['key']: i for i in manifest.get('images', [])}
    got_images = st.get('containerd_images', {}).get('k8s.io', {})
    want_images = {i['name'] + (':' + i['tag'] if i.get('tag') else ''):
                   staged[i['key']]['manifest_digest'] if staged.get(i['key'], {}).get('digest') == i['digest']
                   else 'not staged for the pin ' + i['digest'] for i in images}
    c.eq('images in containerd (name -> digest)', {n: v['digest'] for n, v in got_images.items()}, want_images)
    c.eq('06-images.ps1 emitted', os.path.isfile(os.path.join(scripts, '06-images.ps1')), bool(images))
    # containerd as the import found it: every service a pass started is
    # stopped again in that pass, and none is stopped that it did not start
    # (on a kept machine, build-sim -k, after the earlier build's events)
    before = os.path.join(sim, 'events-before')
    seen = int(open(before).read()) if os.path.isfile(before) else 0
    for i, snap in enumerate(snaps):
        events = snap['state'].get('service_events', [])[seen:]
        seen += len(events)
        first = {}
        for ev in events:
            first.setdefault(ev['name'].lower(), ev['was'])
        for name, was in first.items():
            c.eq('pass %d: service %s after the import' % (i + 1, name),
                 snap['state']['services'][name]['status'], was)
        if images:
            c.true('pass %d: containerd never started for the import' % (i + 1),
                   snap['state']['services']['containerd']['status'] == 'Running' or 'containerd' in first)
    # issue 40: no restart of the first pass (the build of a fresh VM)
    # starts a service: every restart comes before a step registers one
    # (the updates run after 02-payload, before 03-05); and no image holds
    # sshd's host keys, which every node would share
    for r in ([] if kept else snaps[0]['state'].get('restart_starts', [])):
        c.eq('pass 1: services restart %d started' % r['restart'], r['services'], [])
    # and none of the image's services (the plan's, containerd's,
    # cloudbase-init's) is registered before the last update's restart
    plog = snaps[0]['state'].get('package_log', [])
    after = plog[-1]['restarts'] + 1 if plog else 0
    ours = {s['name'].lower() for s in plan['services']} | {'containerd', 'cloudbase-init'}
    for reg_ in ([] if kept else snaps[0]['state'].get('service_registrations', [])):
        if reg_['name'].lower() in ours:
            c.true('pass 1: service %s registered after %d restarts, before the last update\'s restart'
                   % (reg_['name'], reg_['restarts']), reg_['restarts'] >= after)
    for i, snap in enumerate(snaps):
        keys = sorted(p for p in snap['files'] if p.lower().startswith('c:\\programdata\\ssh\\ssh_host_'))
        c.eq('pass %d: sshd host keys in the image' % (i + 1), keys, [])
    # windows.updates (docs/updates.md): each installed by DISM in the
    # plan's order, a restart between any two DISM calls, and the build
    # Windows reports after the last restart the recipe's expect_build
    updates = plan.get('updates', [])
    log = st.get('package_log', [])
    first = []
    for x in log:
        if x['kb'] not in first:
            first.append(x['kb'])
    c.eq('updates DISM was asked for, in order', first, [u['kb'] for u in updates])
    for a, b in zip(log, log[1:]):
        c.true('no restart between DISM installing %s and %s' % (a['kb'], b['kb']),
               b['restarts'] > a['restarts'])
    script = st.get('dism_script', {})
    for u in updates:
        skipped = set(script.get(u['kb'], {}).get('exit', [])) & {0x240006, 0x800f081e - (1 << 32), 0x80240017 - (1 << 32)}
        if not skipped:
            c.eq('update %s installed' % u['kb'], st['packages'].get(u['kb'], {}).get('state'),
                 'installed')
    want = next((u['expect_build'] for u in reversed(updates) if u['expect_build']), None)
    if want:
        cv = 'HKLM:\\SOFTWARE\\Microsoft\\Windows NT\\CurrentVersion'
        c.eq('build after the updates', '%s.%s' % (reg(st, cv, 'CurrentBuild')['value'],
                                                   reg(st, cv, 'UBR')['value']), want)

    # the argv of every native call: PowerShell 7.6 (Legacy) + .NET's parser
    # against winnode.py's model of 5.1 + CommandLineToArgvW
    logged = [json.loads(l) for l in open(os.path.join(sim, 'arglog.jsonl'), encoding='utf-8')]
    calls = [x for snap in snaps for x in []]  # noqa: F841
    # (node_st: the first boot's calls too)
    c.eq('native calls logged vs received', len(logged), len(node_st['calls']))
    for lg, call in zip(logged, node_st['calls']):
        try:
            model = winnode.receives(lg['values'])
        except winnode.ModelError as e:
            c.true('%s: the model refuses %r: %s' % (call['prog'], lg['values'], e), False)
            continue
        c.eq('%s received (PowerShell 7.6 Legacy) vs the 5.1 model' % call['prog'], call['argv'], model)

    # sc.exe's and nssm's argv against the model computed from the scripts alone
    for name, rec in recs.items():
        if rec['Manager'] == 'sc':
            want = winnode.sc_service(rec, open(os.path.join(scripts, '05-services.ps1'), encoding='utf-8').read(),
                                      os.path.join(out, 'tree'), None)[0][1:]
            got = [x['argv'] for x in st['calls'] if x['prog'].lower().endswith('\\sc.exe')
                   and x['argv'][:1] in (['create'], ['config']) and x['argv'][1:2] == [name]]
            c.true('sc.exe create/config %s never ran' % name, len(got) > 0)
            for g in got:
                c.eq('sc.exe %s argv (model)' % name, g[1:], want[1:])
        elif rec['AppParameters']:
            want = winnode.nssm_service(rec, open(os.path.join(scripts, '05-services.ps1'), encoding='utf-8').read(),
                                        os.path.join(out, 'tree'), None)[0][1:]
            got = [x['argv'] for x in st['calls'] if x['prog'].lower().endswith('\\nssm.exe')
                   and x['argv'][:3] == ['set', name, 'AppParameters']]
            c.true('nssm set %s AppParameters never ran' % name, len(got) > 0)
            for g in got:
                c.eq('nssm %s AppParameters argv (model)' % name, g, want)
    lits = winnode.native_literals([os.path.join(scripts, f) for f in sorted(os.listdir(scripts)) if f.endswith('.ps1')])
    for lit in lits:
        prog = lit[0].replace('"', '').replace('$env:SystemRoot', 'C:\\Windows').lower()
        ran = [x['argv'] for x in st['calls'] if x['prog'].lower() == prog]
        if ran:
            c.true('%s ran with other arguments than %r: %r' % (prog, lit[1:], ran), lit[1:] in ran)

    for b in c.bad:
        print('FAIL ' + b)
    if c.bad:
        return 1
    print('ok %s: %d checks of the end state' % (builder, c.n))
    return 0


if __name__ == '__main__':
    sys.exit(main())
