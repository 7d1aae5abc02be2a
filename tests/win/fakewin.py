#!/usr/bin/env python3
# @where the engine tier: the emitted scripts run in PowerShell 7.6 as Packer
#   runs them, against a simulated Windows -- the fake programs, each citing
#   its source (docs/node.md's fake table)
"""The simulated Windows of the engine tier (docs/node.md, "The engine
tier"): the state model every mock and every fake program reads and writes,
and the fake native programs themselves.

The state is one JSON file (WBSIM_STATE), the system drive one directory
(WBSIM_ROOT, the root of C:). PowerShell's cmdlet mocks (tests/win/sim.ps1)
and these programs share it, so what `sc.exe create` registers is what
`Get-Service` finds and what the test reads at the end.

usage:
  fakewin.py init STATE ROOT BUILDER WINDOWS_VERSION   a fresh machine
  fakewin.py restart STATE                            windows-restart
  fakewin.py snapshot STATE ROOT OUT                  the machine after a pass
  fakewin.py run WINPATH ARG...                       a fake native program
      (sim.ps1 routes every program under C:\\ here; WINPATH is the Windows
      path it was started as, ARG... the argv it received)

Exit codes the fakes script (what the scripts must cope with):
  dism /enable-feature   3010 until the restart after it, then 0
  msiexec /i             1618 (another installation in progress) the first
                         time, then it installs
  sc create              1072 while a service of that name is marked for
                         deletion (it goes after two queries), 1073 if it exists
  sc config|failure      1060 when the service does not exist
  sc stop                1062 when not running
  wevtutil um            15010 (ERROR_EVT_CONFIGURATION_ERROR, Microsoft Learn
                         win32/wes/windows-event-log-error-constants) when the
                         manifest is not installed. Unsourced: Microsoft
                         Learn's wevtutil page (windows-server/administration/
                         windows-commands/wevtutil) gives no exit codes. No
                         source needed: 05-services.ps1 logs um's code and
                         never judges it, so any answer (0 or not) is fine.
                         im exits 1 when the manifest is installed. Also
                         unsourced; 05-services runs um before it, so im
                         finds it installed only if um failed on an installed
                         manifest. Then im exiting 0 passes and non-zero
                         fails the step: the right outcome either way
                         (wevtutil() below)
  ctr                    1 when containerd's service is not running (no
                         pipe to dial); images import 1 when a blob its
                         walk or unpack needs is not in the tar (by its
                         content's digest, as containerd's content store
                         finds it): every windows/amd64 entry of a list,
                         whatever its os.version (ctr_import: held to
                         Debian's containerd by containerd_import.bats)
  dism /add-package      (a Windows update, its KB from the file name) 3010
                         (ERROR_SUCCESS_REBOOT_REQUIRED, Microsoft Learn
                         debug/system-error-codes--1700-3999-) and pending
                         until the next restart, which installs it and sets
                         CurrentVersion's UBR; 0x800f082f (CBS_E_PENDING)
                         while any package waits for a restart; once
                         installed 0x240006 (WU_S_ALREADY_INSTALLED, Microsoft
                         Learn "WUA Success and Error Codes"). Unsourced for
                         DISM: its pages give no code for a package that is
                         already installed, and DISM may say 0 instead.
                         09-updates.ps1 counts both as done (0 as
                         "installed"), and tests/cli/wintier_updates.bats
                         scripts each one. CBS's 0x800f081e (not applicable) and
                         0x800f0823 (newer servicing stack needed) only
                         when scripted (09-updates.ps1 cites them). WBSIM_DISM_SCRIPT (a JSON file, read by
                         init) scripts them per KB: {"KB5050009": {"exit":
                         [3010, ...], "build": "26100.2894"}}: the codes of
                         its first calls (then as unscripted), and the
                         build it brings (0: installed at once; 3010: at
                         the restart; anything else: not installed), and
                         "installed": true for a KB the component store
                         holds before the build (Get-HotFix lists it:
                         sim.ps1).
"""
import hashlib
import json
import os
import re
import sys

STATE = os.environ.get('WBSIM_STATE', '')
ROOT = os.environ.get('WBSIM_ROOT', '')

MACHINE_PATH = ('%SystemRoot%\\system32;%SystemRoot%;%SystemRoot%\\System32\\Wbem;'
                '%SYSTEMROOT%\\System32\\WindowsPowerShell\\v1.0\\;'
                '%SYSTEMROOT%\\System32\\OpenSSH\\')
ENV_KEY = 'HKLM:\\SYSTEM\\CurrentControlSet\\Control\\Session Manager\\Environment'
STATE_KEY = 'HKLM:\\SOFTWARE\\Microsoft\\Windows\\CurrentVersion\\Setup\\State'
WINLOGON_KEY = 'HKLM:\\SOFTWARE\\Microsoft\\Windows NT\\CurrentVersion\\Winlogon'
CLOUDBASE = 'C:\\Program Files\\Cloudbase Solutions\\Cloudbase-Init'
# Container Credential Guard's plugin list: TrustedInstaller's, Administrators
# may read it only (what image-builder's roles/gmsa script works around)
CCG_KEY = 'HKLM:\\SYSTEM\\CurrentControlSet\\Control\\CCG\\COMClasses'
CURRENT_VERSION = 'HKLM:\\SOFTWARE\\Microsoft\\Windows NT\\CurrentVersion'
# each Windows Server version's build (the platform table, lib/platform.c)
BUILDS = {'2019': '17763', '2022': '20348', '2025': '26100'}
# DISM's codes as Windows reports them (a signed 32-bit exit code)
ALREADY_INSTALLED = 0x240006
PENDING_RESTART = 0x800f082f - (1 << 32)


def load(path=None):
    with open(path or STATE, encoding='utf-8') as f:
        return json.load(f)


def save(st, path=None):
    tmp = (path or STATE) + '.tmp'
    with open(tmp, 'w', encoding='utf-8') as f:
        json.dump(st, f, indent=1, sort_keys=True)
    os.replace(tmp, path or STATE)


def host_path(win):
    """C:\\a\\b -> ROOT/a/b (the system drive)."""
    if len(win) < 3 or win[1:3] not in (':\\', ':/') or win[0].upper() != 'C':
        raise SystemExit('fakewin: not a path on C: %r' % win)
    return os.path.join(ROOT, *[p for p in win[3:].replace('/', '\\').split('\\') if p])


def reg_set(st, key, name, typ, value):
    k = st['registry'].setdefault(key.lower(), {'path': key, 'values': {}})
    k['values'][name.lower()] = {'name': name, 'type': typ, 'value': value}


def service(st, name, **kw):
    rec = {'name': name, 'binPath': '', 'start': 'demand', 'depend': [],
           'failure': None, 'status': 'Stopped', 'manager': 'sc', 'nssm': {},
           'pendingDelete': 0}
    rec.update(kw)
    st['services'][name.lower()] = rec
    # when it was registered, in restarts (issue 40: tests/win/check.py holds
    # every service of the image to after the last update's restart)
    st.setdefault('service_registrations', []).append({'name': name, 'restarts': st['restarts']})
    return rec


def init(state, root, builder, winver):
    global ROOT
    ROOT = root
    st = {'builder': builder, 'windows_version': winver, 'services': {},
          'registry': {}, 'features': {}, 'dism': {}, 'firewall': {},
          'defender': {'ExclusionPath': []}, 'calls': [], 'restarts': 0,
          'pending_restart': False, 'msiexec_busy': 1, 'power': 'on',
          'admin_password_changes': 0, 'sleeps': 0,
          # local accounts (Microsoft.PowerShell.LocalAccounts) and `net accounts`
          'users': {'administrator': {'Name': 'Administrator', 'Enabled': True,
                                      'SID': 'S-1-5-21-1004336348-1177238915-682003330-500'}},
          'groups': {}, 'accounts': {'maxpwage': '42'},
          # Start-Service/Stop-Service (sim.ps1): verb, name, status found
          'service_events': []}
    for f in ('Containers', 'Hyper-V', 'Hyper-V-PowerShell', 'NET-Framework-45-Core'):
        st['features'][f] = {'installed': f == 'NET-Framework-45-Core', 'pending': False}
    st['dism']['Microsoft-Hyper-V'] = 'disabled'
    # Windows updates (dism /add-package): the build Windows reports, and
    # what a test scripts per KB
    reg_set(st, CURRENT_VERSION, 'CurrentBuild', 'String', BUILDS.get(winver, '20348'))
    reg_set(st, CURRENT_VERSION, 'UBR', 'DWord', 1)
    st['packages'] = {}
    st['package_log'] = []
    st['dism_script'] = {}
    if os.environ.get('WBSIM_DISM_SCRIPT'):
        with open(os.environ['WBSIM_DISM_SCRIPT'], encoding='utf-8') as f:
            st['dism_script'] = json.load(f)
    # a KB scripted "installed": true is in the component store before the
    # build (a base image that has it, or a VM an earlier build updated)
    for kb, sc in st['dism_script'].items():
        if sc.get('installed'):
            st['packages'][kb] = {'state': 'installed', 'build': sc.get('build')}
    reg_set(st, ENV_KEY, 'Path', 'ExpandString', MACHINE_PATH)
    # keys Administrators may not write, by security record (sim.ps1)
    st['registry'][CCG_KEY.lower()] = {'path': CCG_KEY, 'values': {}}
    st['registry_acl'] = {CCG_KEY.lower(): {'path': CCG_KEY, 'owner': 'TrustedInstaller',
                                            'admins': 'read', 'inherit': True}}
    st['event_manifests'] = {}
    reg_set(st, STATE_KEY, 'ImageState', 'String', 'IMAGE_STATE_COMPLETE')
    reg_set(st, WINLOGON_KEY, 'AutoAdminLogon', 'String', '1')
    reg_set(st, WINLOGON_KEY, 'DefaultPassword', 'String', 'packer-one-off')
    reg_set(st, WINLOGON_KEY, 'AutoLogonCount', 'DWord', 1)
    service(st, 'WinRM', start='auto', status='Running', binPath='C:\\Windows\\System32\\svchost.exe -k NetworkService')
    # WinRM as Packer reaches it: Basic authentication, the HTTP listener
    # and an HTTPS one (the ISO builders' answer file, packer/answer/
    # Autounattend.xml.in, also adds two firewall rules for every profile;
    # amazon-ebs' user data the same without them; azure-arm's own setup)
    # (oracle-oci: NTLM, Basic never turned on, tests/cli/oci.bats)
    st['winrm'] = {'basic': builder != 'oracle-oci', 'listeners': {
        'Listener_1084132640': ['Transport=HTTP', 'Address=*'],
        'Listener_1305953032': ['Transport=HTTPS', 'Address=*']},
        # the HTTPS listener's self-signed certificate (New-SelfSignedCertificate
        # in Cert:\LocalMachine\My, by thumbprint)
        'certificates': {'Listener_1305953032': '3F2A9C0D5E8B7A6F1C2D3E4F5A6B7C8D9E0F1A2B'}}
    st['certificates'] = ['3F2A9C0D5E8B7A6F1C2D3E4F5A6B7C8D9E0F1A2B']
    # `winrm quickconfig` (the ISO answer file) lets local administrators
    # in remotely: LocalAccountTokenFilterPolicy = 1 (Microsoft Learn,
    # "Installation and configuration for Windows Remote Management")
    # and oracle-oci's user data for opc over NTLM
    if builder not in ('azure-arm', 'amazon-ebs'):
        reg_set(st, 'HKLM:\\SOFTWARE\\Microsoft\\Windows\\CurrentVersion\\Policies\\System',
                'LocalAccountTokenFilterPolicy', 'DWord', 1)
    # scheduled tasks (schtasks.exe), by name
    st['tasks'] = {}
    # (oracle-oci's bootstrap user data, packer/oci/oci-winrm-bootstrap.txt.in,
    # adds the HTTPS rule only)
    rules = (('WinRM HTTP (winbuild)', '5985'), ('WinRM HTTPS (winbuild)', '5986'))
    if builder == 'oracle-oci':
        rules = rules[1:]
    if builder not in ('azure-arm', 'amazon-ebs'):
        for i, (disp, port) in enumerate(rules):
            name = '{6f1b2c3d-0000-4000-8000-00000000000%d}' % i
            st['firewall'][name] = {'Name': name, 'DisplayName': disp, 'Direction': 'Inbound', 'Action': 'Allow',
                                    'Protocol': 'TCP', 'LocalPort': [port], 'Enabled': 'True', 'Profile': ['Any']}
    os.makedirs(host_path('C:\\Windows\\System32\\Sysprep'), exist_ok=True)
    os.makedirs(host_path('C:\\Windows\\Temp'), exist_ok=True)
    os.makedirs(host_path('C:\\Windows\\Panther'), exist_ok=True)
    os.makedirs(host_path('C:\\Program Files'), exist_ok=True)
    os.makedirs(host_path('C:\\ProgramData'), exist_ok=True)
    for prog in ('System32\\sc.exe', 'System32\\dism.exe', 'System32\\msiexec.exe',
                 'System32\\netsh.exe', 'System32\\net.exe', 'System32\\schtasks.exe', 'System32\\icacls.exe', 'System32\\wevtutil.exe', 'System32\\Sysprep\\sysprep.exe',
                 'System32\\shutdown.exe'):
        touch(host_path('C:\\Windows\\' + prog), b'MZ fake ' + prog.encode() + b'\n')
    # what each platform's base image brings (image-builder packer/azure, packer/ami)
    if builder == 'azure-arm':
        for name in ('RdAgent', 'WindowsAzureGuestAgent'):
            service(st, name, start='auto', status='Running', binPath='C:\\WindowsAzure\\%s.exe' % name)
        # Setup's answer file a marketplace image keeps
        touch(host_path('C:\\Windows\\Panther\\unattend.xml'), b'<unattend/>\n')
    if builder == 'amazon-ebs':
        touch(host_path('C:\\Program Files\\Amazon\\EC2Launch\\ec2launch.exe'), b'MZ fake ec2launch\n')
        service(st, 'EC2Launch', start='auto', status='Running',
                binPath='"C:\\Program Files\\Amazon\\EC2Launch\\service\\EC2LaunchService.exe"')
    save(st, state)


def touch(p, data):
    os.makedirs(os.path.dirname(p), exist_ok=True)
    with open(p, 'wb') as f:
        f.write(data)
    os.chmod(p, 0o755)


def restart(state):
    """windows-restart: pending features are in, auto-start services run."""
    st = load(state)
    st['restarts'] += 1
    st['pending_restart'] = False
    for f in st['features'].values():
        if f['pending']:
            f['pending'] = False
            f['installed'] = True
    for name, v in list(st['dism'].items()):
        if v == 'pending':
            st['dism'][name] = 'enabled'
    for kb, p in st.get('packages', {}).items():
        if p['state'] == 'pending':
            p['state'] = 'installed'
            set_build(st, p.get('build'))
    started = []
    for k in list(st['services']):
        s = st['services'][k]
        if s['pendingDelete']:
            del st['services'][k]
        elif s['start'] == 'auto':
            if s.get('status') != 'Running':
                started.append(k)
            s['status'] = 'Running'
            if k.lower() == 'sshd':
                # sshd creates the host keys it misses when it starts
                # (Win32-OpenSSH 8.1 on: "sshd ... generates host keys on
                # first start", PowerShell/Win32-OpenSSH wiki "Install
                # Win32 OpenSSH"; install-sshd.ps1 no longer makes them)
                for t in ('rsa', 'ecdsa', 'ed25519'):
                    p = host_path('C:\\ProgramData\\ssh\\ssh_host_%s_key' % t)
                    if not os.path.exists(p):
                        touch(p, b'fake %s host key\n' % t.encode())
    # which services this restart started (issue 40: none of the image's
    # may start in the build VM; tests/win/check.py)
    st.setdefault('restart_starts', []).append({'restart': st['restarts'], 'services': started})
    save(st, state)


# ---- the programs ----

def sc(st, argv):
    """sc.exe as sc_win32 models it; with WBSIM_SC_FAILCODE=N every failure
    exits N instead of the Win32 error (the other plausible answer: Microsoft
    Learn does not document sc.exe's exit status), which the scripts must
    survive (tests/cli/wintier.bats)."""
    code = sc_win32(st, argv)
    alt = os.environ.get('WBSIM_SC_FAILCODE')
    return int(alt) if code and alt else code


def sc_win32(st, argv):
    """sc.exe create|config|failure|stop|delete|start NAME [key= value ...].
    Sources (Microsoft Learn, windows-server/administration/windows-commands/
    sc-create, sc-config, sc-failure, sc-delete):
     - each option is "key=" with its value as the next argument;
       binpath= is required by create ("there is no default"); start=
       takes boot|system|auto|demand|disabled|delayed-auto; depend= is a
       "/"-separated list; failure takes reset= (seconds) and actions=
       (action/delay_ms, "/"-separated);
     - exit codes are the Win32 errors of the service API that failed:
       1060 ERROR_SERVICE_DOES_NOT_EXIST (OpenService), 1062
       ERROR_SERVICE_NOT_ACTIVE (ControlService, stop), 1072
       ERROR_SERVICE_MARKED_FOR_DELETE (CreateService, DeleteService), 1073
       ERROR_SERVICE_EXISTS (CreateService), 87 ERROR_INVALID_PARAMETER
       (Microsoft Learn debug/system-error-codes--1000-1299- and
       --0-499-; win32/api/winsvc/nf-winsvc-createservicew,
       nf-winsvc-deleteservice, nf-winsvc-controlservice). Microsoft Learn
       does not say that sc.exe exits with that code, so the scripts do
       not rely on it: common.ps1 Remove-ServiceAndWait logs stop's and
       delete's codes and judges the service's state (stopped, then gone),
       and is tested with every failure exiting 1 (WBSIM_SC_FAILCODE);
     - delete marks the service; it goes once every handle is closed and it
       is not running (DeleteService, Remarks). The fake drops it after two
       Get-Service queries (sim.ps1); the script polls for two minutes;
     - not modelled: stop of a service with running dependents (1051
       ERROR_DEPENDENT_SERVICES_RUNNING), stop returning while STOP_PENDING
       (ControlService returns as soon as the control is sent), start of a
       running service (1056). The scripts parse none of sc.exe's output:
       the "[SC] ..." lines here are shortened, for the log only."""
    if not argv:
        return 1
    verb, rest = argv[0].lower(), argv[1:]
    if verb in ('create', 'config', 'failure', 'stop', 'delete', 'query', 'start'):
        if not rest:
            return 1
        name = rest[0]
        svc = st['services'].get(name.lower())
        opts = {}
        it = rest[1:]
        # sc.exe's options are "key=" followed by the value as the next argument
        i = 0
        while i < len(it):
            k = it[i]
            if not k.endswith('=') or i + 1 >= len(it):
                print('[SC] invalid option %r' % k)
                return 87
            opts[k[:-1].lower()] = it[i + 1]
            i += 2
        if verb == 'create':
            if svc is not None and svc['pendingDelete']:
                print('[SC] CreateService FAILED 1072: marked for deletion')
                return 1072
            if svc is not None:
                print('[SC] CreateService FAILED 1073: exists')
                return 1073
            if 'binpath' not in opts:
                return 87
            svc = service(st, name, manager='sc')
        elif svc is None:
            print('[SC] OpenService FAILED 1060: does not exist')
            return 1060
        if verb in ('create', 'config'):
            unknown = set(opts) - {'binpath', 'start', 'depend', 'displayname', 'obj', 'type'}
            if unknown:
                return 87
            if 'binpath' in opts:
                svc['binPath'] = opts['binpath']
                svc['manager'] = 'sc'
                svc['nssm'] = {}
            if 'start' in opts:
                if opts['start'] not in ('auto', 'demand', 'disabled', 'delayed-auto', 'boot', 'system'):
                    return 87
                svc['start'] = opts['start']
            if 'depend' in opts:
                svc['depend'] = [d for d in opts['depend'].split('/') if d]
            print('[SC] %s SUCCESS' % ('CreateService' if verb == 'create' else 'ChangeServiceConfig'))
            return 0
        if verb == 'failure':
            if set(opts) - {'reset', 'actions', 'command', 'reboot'}:
                return 87
            svc['failure'] = {'reset': opts.get('reset'), 'actions': opts.get('actions')}
            print('[SC] ChangeServiceConfig2 SUCCESS')
            return 0
        if verb == 'stop':
            if svc['status'] != 'Running':
                print('[SC] ControlService FAILED 1062: not started')
                return 1062
            svc['status'] = 'Stopped'
            return 0
        if verb == 'start':
            svc['status'] = 'Running'
            return 0
        if verb == 'delete':
            if svc['pendingDelete']:
                return 1072
            svc['pendingDelete'] = 2
            print('[SC] DeleteService SUCCESS')
            return 0
        return 0
    return 1


NSSM_KEYS = {'application', 'appdirectory', 'appparameters', 'appstdout', 'appstderr',
             'dependonservice', 'start', 'approtatefiles', 'approtateonline', 'approtatebytes', 'displayname',
             'description', 'objectname', 'appexit', 'apprestartdelay', 'appenvironmentextra'}


def nssm(st, argv, prog):
    """nssm install NAME APP [ARGS...] | set NAME KEY VALUE... | reset NAME KEY,
    run as an administrator. Source: NSSM 2.24, the version winbuild pins
    (recipes/components/nssm.yaml). Read in the kirillkovalenko/nssm mirror
    of git.nssm.cc at 220d2b0e ("NSSM 2.24."): nssm.cpp:140 and :143
    exit with what pre_install_service / pre_edit_service return;
     - install: CreateService(... SERVICE_AUTO_START ...) with nssm.exe as
       the image (service.cpp:1072), so start=auto and binPath=nssm; ARGS
       joined by one space into AppParameters (service.cpp:746-752); when
       CreateService fails (for one, the name exists) it exits 5
       (service.cpp:1073-1076);
     - set/reset: an unknown KEY exits 1 (service.cpp:812-815); a service
       that cannot be opened exits 3 (service.cpp:849-853); set's values
       are joined with a space, or CRLF for REG_MULTI_SZ keys such as
       DependOnService (service.cpp:1001-1010, settings.cpp:1052); Start
       takes SERVICE_AUTO_START|SERVICE_DELAYED_AUTO_START|
       SERVICE_DEMAND_START|SERVICE_DISABLED (service.cpp:10), and any other
       value fails set_setting (settings.cpp:827), exit 6 (service.cpp:1030).
    Where the fake differs, it is stricter and still non-zero: a bad Start
    value gives 1 here, not 6; several values for a single-value key give 1
    here, where nssm joins them. 05-services.ps1 accepts 0 only and passes
    one value per key except DependOnService, so no script path sees the
    difference. Not modelled: a caller who is not an administrator
    (nssm.cpp:139, UAC elevation); Packer's user is one."""
    if len(argv) < 2:
        return 1
    verb, name = argv[0].lower(), argv[1]
    svc = st['services'].get(name.lower())
    if verb == 'install':
        if svc is not None:
            print("Error creating service! (exists)")
            return 5
        if len(argv) < 3:
            return 1
        svc = service(st, name, manager='nssm', binPath=prog, start='auto')
        svc['nssm'] = {'Application': argv[2]}
        if len(argv) > 3:
            svc['nssm']['AppParameters'] = ' '.join(argv[3:])
        return 0
    if svc is None:
        print("Can't open service!")
        return 3
    if verb == 'set':
        if len(argv) < 4 or argv[2].lower() not in NSSM_KEYS:
            return 1
        key = argv[2]
        if key.lower() == 'dependonservice':
            svc['depend'] = argv[3:]
        elif key.lower() == 'start':
            m = {'SERVICE_AUTO_START': 'auto', 'SERVICE_DEMAND_START': 'demand',
                 'SERVICE_DISABLED': 'disabled', 'SERVICE_DELAYED_AUTO_START': 'delayed-auto'}
            if argv[3] not in m:
                return 1
            svc['start'] = m[argv[3]]
        else:
            if len(argv) != 4:
                return 1
            svc['nssm'][key] = argv[3]
        return 0
    if verb == 'reset':
        if len(argv) != 3:
            return 1
        svc['nssm'].pop(argv[2], None)
        return 0
    return 1


def set_build(st, build):
    """An installed update's build ("26100.2894") becomes Windows'."""
    if build:
        cur, ubr = build.split('.')
        reg_set(st, CURRENT_VERSION, 'CurrentBuild', 'String', cur)
        reg_set(st, CURRENT_VERSION, 'UBR', 'DWord', int(ubr))


def dism_add_package(st, argv):
    paths = [a.split(':', 1)[1] for a in argv if a.lower().startswith('/packagepath:')]
    low = [a.lower() for a in argv]
    if len(paths) != 1 or '/norestart' not in low:
        return 87
    m = re.search(r'kb(\d+)', paths[0].rsplit('\\', 1)[-1], re.I)
    if not m or not os.path.isfile(host_path(paths[0])):
        return 2
    kb = 'KB' + m.group(1)
    script = st['dism_script'].get(kb, {})
    calls = sum(1 for c in st['package_log'] if c['kb'] == kb)
    pkg = st['packages'].get(kb)
    if any(p['state'] == 'pending' for p in st['packages'].values()):
        code = PENDING_RESTART
    elif calls < len(script.get('exit', [])):
        code = script['exit'][calls]
    else:
        code = ALREADY_INSTALLED if pkg else 3010
    st['package_log'].append({'kb': kb, 'file': paths[0], 'exit': code,
                              'restarts': st['restarts']})
    if code in (0, 3010) and not pkg:
        st['packages'][kb] = {'state': 'installed' if code == 0 else 'pending',
                              'build': script.get('build')}
        if code == 0:
            set_build(st, script.get('build'))
        else:
            st['pending_restart'] = True
    return code


def dism(st, argv):
    low = [a.lower() for a in argv]
    if '/online' in low and '/add-package' in low:
        return dism_add_package(st, argv)
    if '/online' not in low or '/enable-feature' not in low:
        return 87
    names = [a.split(':', 1)[1] for a in argv if a.lower().startswith('/featurename:')]
    if len(names) != 1:
        return 87
    cur = st['dism'].get(names[0], 'unknown')
    if cur == 'unknown':
        return 0x800f080c & 0xff
    if cur == 'enabled':
        print('The operation completed successfully.')
        return 0
    st['dism'][names[0]] = 'pending'
    st['pending_restart'] = True
    print('Restart Windows to complete this operation.')
    return 3010


def msiexec(st, argv):
    """msiexec /i MSI /qn [/norestart] [/l*v LOG] PROP=VALUE...: the
    cloudbase-init MSI. Exit codes are Windows Installer's (Microsoft Learn
    win32/msi/error-codes): 1618 ERROR_INSTALL_ALREADY_RUNNING while
    another installation holds the _MSIExecute mutex (win32/msi/
    -msiexecute-mutex; Windows Update or a cloud agent at first boot; the
    fake says it once), 1619 ERROR_INSTALL_PACKAGE_OPEN_FAILED for a
    missing package, 1639 ERROR_INVALID_COMMAND_LINE. 03-cloudbase-init.ps1
    retries 1618 and accepts 0 and 3010 (ERROR_SUCCESS_REBOOT_REQUIRED);
    1641 (ERROR_SUCCESS_REBOOT_INITIATED) cannot come back because the
    step passes /norestart (windows-commands/msiexec, "/norestart: stops
    the device from restarting"); 1603 (ERROR_INSTALL_FAILURE) and any
    other code fail the step. What the MSI lays down (bin\\SetSetupComplete.cmd,
    conf\\*, the cloudbase-init service) is the installer's layout
    (cloudbase/cloudbase-init-installer; cloudbase-init docs "Tutorial":
    bin, conf, log, LocalScripts, Python)."""
    low = [a.lower() for a in argv]
    if '/i' not in low or '/qn' not in low:
        return 1639
    if st['msiexec_busy'] > 0:
        # another installation is in progress (Windows Update, an agent)
        st['msiexec_busy'] -= 1
        return 1618
    msi = argv[low.index('/i') + 1]
    if not os.path.isfile(host_path(msi)):
        return 1619
    props = [a for a in argv if '=' in a and not a.startswith('/')]
    st.setdefault('msi_installs', []).append({'msi': msi, 'properties': props})
    # what the cloudbase-init MSI lays down
    base = CLOUDBASE
    touch(host_path(base + '\\bin\\SetSetupComplete.cmd'), b'@echo off\nfake SetSetupComplete.cmd\n')
    for conf in ('cloudbase-init.conf', 'cloudbase-init-unattend.conf', 'Unattend.xml'):
        touch(host_path(base + '\\conf\\' + conf), b'from the MSI\n')
    service(st, 'cloudbase-init', start='auto', binPath='"%s\\Python\\Scripts\\cloudbase-init.exe"' % base)
    if '/l*v' in low:
        touch(host_path(argv[low.index('/l*v') + 1]), b'MSI log\n')
    return 0


# the line cloudbase-init's SetSetupComplete.cmd writes (cloudbase/
# cloudbase-init-installer CloudbaseInitSetup/SetSetupComplete.cmd, bf6cb927)
SETUPCOMPLETE_LINE = 'sc config cloudbase-init start= auto && net start cloudbase-init '


def setsetupcomplete(st, argv):
    """cloudbase-init's bin\\SetSetupComplete.cmd. Upstream, cloudbase/
    cloudbase-init-installer CloudbaseInitSetup/SetSetupComplete.cmd (last
    changed in bf6cb927, HEAD 798df5ec), is three lines: `mkdir
    "%SYSTEMROOT%\\Setup\\Scripts"` (an error on stderr when the folder
    exists), `sc config cloudbase-init start= demand`, then `echo sc config
    cloudbase-init start= auto ^&^& net start cloudbase-init >
    "%SYSTEMROOT%\\Setup\\Scripts\\SetupComplete.cmd"` (it overwrites, D27).
    Its exit status is that of `sc config`: 0 once the MSI has registered
    the service, as here. The fake does the same: the service becomes
    demand-start (so no build restart starts it; the first boot's
    SetupComplete.cmd makes it auto and starts it), and SetupComplete.cmd
    holds upstream's one line, as cmd's `echo ... > F` writes it (the
    blank before `>` included). check.py holds the image to both."""
    d = host_path('C:\\Windows\\Setup\\Scripts')
    if os.path.isdir(d):
        # its `mkdir %SYSTEMROOT%\Setup\Scripts` (WINDOWS-NODE.md)
        sys.stderr.write('A subdirectory or file C:\\Windows\\Setup\\Scripts already exists.\n')
    os.makedirs(d, exist_ok=True)
    svc = st['services'].get('cloudbase-init')
    if svc is None:
        print('[SC] OpenService FAILED 1060: does not exist')
        return 1060
    svc['start'] = 'demand'
    # `echo ... > SetupComplete.cmd`: it overwrites (issue 27, D27)
    with open(os.path.join(d, 'SetupComplete.cmd'), 'w', encoding='ascii', newline='\r\n') as f:
        f.write(SETUPCOMPLETE_LINE + '\n')
    return 0


def sysprep(st, argv):
    """sysprep /generalize /oobe [/mode:vm] [/quiet] [/unattend:F]
    /shutdown|/quit (Microsoft Learn windows-hardware/manufacture/desktop/
    sysprep-command-line-options: /quit closes Sysprep once done,
    /shutdown shuts the machine down, /mode:vm only with /generalize
    /oobe). After /quit the image state is IMAGE_STATE_GENERALIZE_RESEAL_
    TO_OOBE under HKLM\\...\\Setup\\State (windows-hardware/manufacture/
    desktop/windows-setup-states), the value 08-sysprep.ps1's
    Wait-Generalized polls for (set by /generalize, whether sysprep then
    quits or shuts down). Sysprep's exit code is not documented: 0 here.
    08-sysprep.ps1 accepts 0 only, so a failing sysprep with a non-zero
    exit fails the step. WBSIM_SYSPREP_NOGENERALIZE=1 makes it exit 0
    without generalizing (the image state stays; /shutdown still powers
    off, the worst case: an un-generalized image Packer would capture):
    every platform that uses sysprep.exe itself must catch it
    (Wait-Generalized after /quit, issue 40; tests/cli/wintier.bats)."""
    low = [a.lower() for a in argv]
    if '/generalize' not in low or '/oobe' not in low:
        return 1
    st['sysprep'] = argv
    if os.environ.get('WBSIM_SYSPREP_NOGENERALIZE') != '1':
        reg_set(st, STATE_KEY, 'ImageState', 'String', 'IMAGE_STATE_GENERALIZE_RESEAL_TO_OOBE')
    if '/shutdown' in low:
        st['power'] = 'off'
    return 0


def shutdown(st, argv):
    """shutdown.exe /s [/t N] [/f] [/d p:X:Y] [/c COMMENT] (Microsoft Learn
    windows-commands/shutdown: /s shuts the computer down, /t the time-out
    before it (0 to 315360000 s), /f forces running programs closed, /d a
    reason, /c a comment of at most 512 characters). Only /s is modelled:
    the machine is off once the time-out has passed (the tier's Packer
    waits for it as Packer's shutdown step does). Exit 0 (not documented
    either way; Invoke-Native accepts 0 only)."""
    low = [a.lower() for a in argv]
    if '/s' not in low:
        sys.stderr.write('fakewin: shutdown.exe %s is not modelled\n' % ' '.join(argv))
        return 1
    if '/c' in low and len(argv[low.index('/c') + 1]) > 512:
        return 87
    st['shutdown'] = argv
    st['power'] = 'off'
    return 0


def net(st, argv):
    """net accounts /maxpwage:N|unlimited (the password policy); other
    verbs are not modelled. Sources: net.exe's own help text (`net help
    accounts`: "/MAXPWAGE:{days | UNLIMITED}"; no Microsoft Learn page for
    `net accounts` in the current windows-commands set was found) and
    image-builder's packer/azure/scripts/sysprep.ps1, which runs the same
    command. The exit status (0, or 1 after "The syntax of this command
    is:") is not sourced. 08-sysprep.ps1 accepts 0 only and passes the one
    valid form, so any other answer can only fail the step, never pass it
    wrongly."""
    if argv[:1] != ['accounts'] or len(argv) != 2 or not argv[1].lower().startswith('/maxpwage:'):
        sys.stderr.write('fakewin: net %s is not modelled\n' % ' '.join(argv))
        return 1
    v = argv[1].split(':', 1)[1].lower()
    if v != 'unlimited' and not v.isdigit():
        print('The syntax of this command is:')
        return 1
    st['accounts']['maxpwage'] = v
    print('The command completed successfully.')
    return 0


ICACLS_PERM = re.compile(r'^(\((OI|CI|IO|NP|I)\))*(F|M|RX|R|W|D|N)$')


def schtasks(st, argv):
    """schtasks /Create /TN NAME /SC ONSTART /RU SYSTEM /TR CMD [/RL HIGHEST] [/F]
    and /Delete /TN NAME /F (Microsoft Learn, windows-commands/schtasks-create
    and schtasks-delete): /Create without /F fails (1) when the task exists;
    /TR longer than 261 characters is refused; /Delete of a task that does
    not exist fails (1, "The system cannot find the file specified.")."""
    low = [a.lower() for a in argv]

    def opt(name):
        return argv[low.index(name) + 1] if name in low and low.index(name) + 1 < len(argv) else None
    name = opt('/tn')
    if not name:
        return 1
    if argv[:1] and low[0] == '/create':
        tr, sc = opt('/tr'), opt('/sc')
        if not tr or not sc or len(tr) > 261:
            sys.stderr.write('ERROR: Invalid syntax.\n')
            return 1
        if name.lower() in st['tasks'] and '/f' not in low:
            sys.stderr.write('ERROR: Cannot create a file when that file already exists.\n')
            return 1
        st['tasks'][name.lower()] = {'name': name, 'schedule': sc.upper(), 'run_as': opt('/ru'),
                                     'level': opt('/rl'), 'run': tr}
        print('SUCCESS: The scheduled task "%s" has successfully been created.' % name)
        return 0
    if argv[:1] and low[0] == '/delete':
        if name.lower() not in st['tasks']:
            sys.stderr.write('ERROR: The system cannot find the file specified.\n')
            return 1
        del st['tasks'][name.lower()]
        print('SUCCESS: The scheduled task "%s" was successfully deleted.' % name)
        return 0
    return 1


def icacls(st, argv):
    """icacls PATH [/inheritance:e|d|r] [/grant[:r] SID:PERM ...]: the
    folder's ACL as the model keeps it (st['acls']): whether inherited
    entries were removed, and each principal's grant. Only what winbuild
    uses; anything else is "Invalid parameter" (87). Source: Microsoft
    Learn windows-server/administration/windows-commands/icacls: /grant:r
    replaces the SID's explicit grants, /inheritance:e|d|r enables,
    disables (copying) or removes inherited entries, a numeric SID is
    written with a leading "*", perm is F|M|RX|R|W|D|N or a list, after
    (OI)(CI)(IO)(NP)(I) inheritance flags. The exit codes (2 for a missing
    path, 87 for a bad parameter) are Win32 errors that the page does not
    list. 05-services.ps1 accepts 0 only, so any other failure code fails
    the step the same way. The output ("processed file: ...") is for the
    log only: no script parses it."""
    if not argv or not os.path.isdir(host_path(argv[0])):
        print('%s: The system cannot find the file specified.' % (argv[0] if argv else ''))
        return 2
    acl = st.setdefault('acls', {}).setdefault(argv[0].lower(), {'inheritance': 'e', 'grants': {}})
    i = 1
    while i < len(argv):
        a = argv[i].lower()
        if a.startswith('/inheritance:') and a[13:] in ('e', 'd', 'r'):
            acl['inheritance'] = a[13:]
            i += 1
        elif a in ('/grant', '/grant:r'):
            i += 1
            n = 0
            while i < len(argv) and not argv[i].startswith('/'):
                who, _, perm = argv[i].rpartition(':')
                if not who.startswith('*S-1-') or not ICACLS_PERM.match(perm):
                    print('Invalid parameter "%s"' % argv[i])
                    return 87
                acl['grants'][who[1:]] = perm
                i += 1
                n += 1
            if not n:
                return 87
        else:
            print('Invalid parameter "%s"' % argv[i])
            return 87
    print('processed file: %s' % argv[0])
    return 0


def wevtutil(st, argv):
    """wevtutil im|um MANIFEST: the event providers the model keeps
    (st['event_manifests'], by manifest path). um of a manifest that is not
    installed fails (the scripts must not depend on it succeeding).
    Source: Microsoft Learn windows-server/administration/windows-commands/
    wevtutil ("{im | install-manifest} <Manifest>", "{um |
    uninstall-manifest} <Manifest>": installs or uninstalls the publishers
    and logs of a manifest). The page gives no exit codes: 87, 2, 15010
    and 1 here are Win32 errors picked for the log. Why no answer can
    mislead 05-services.ps1 is in the module docstring (wevtutil um)."""
    if len(argv) != 2 or argv[0].lower() not in ('im', 'um', 'install-manifest', 'uninstall-manifest'):
        print('The parameter is incorrect.')
        return 87
    key = argv[1].lower()
    if not os.path.isfile(host_path(argv[1])):
        print('The system cannot find the file specified.')
        return 2
    mans = st.setdefault('event_manifests', {})
    if argv[0].lower() in ('um', 'uninstall-manifest'):
        if key not in mans:
            print('Failed to uninstall the manifest: the publisher is not installed.')
            return 15010
        del mans[key]
        return 0
    if key in mans:
        print('**** Warning: Publisher is already installed.')
        return 1
    mans[key] = {'path': argv[1]}
    return 0


MT_INDEXES = ('application/vnd.oci.image.index.v1+json',
              'application/vnd.docker.distribution.manifest.list.v2+json')


MT_MANIFESTS = ('application/vnd.oci.image.manifest.v1+json',
                'application/vnd.docker.distribution.manifest.v2+json')


def ctr_import(st, path, platform):
    """`ctr images import --platform P TAR` as containerd imports it, the
    same on 1.6 and 2.x for this input (held to Debian's containerd 1.6.20
    by tests/cli/containerd_import.bats, the contract test: same tars, same
    answer). Sources, containerd 1.6.20 (2806fc10) unless said:
     - every regular file of the tar is ingested by the digest of its
       content (images/archive/importer.go ImportIndex); an OCI layout needs
       oci-layout 1.0.0 and index.json;
     - `--platform P` is platforms.OnlyStrict(Parse(P))
       (cmd/ctr/commands/images/import.go:129), whose matcher compares
       os, architecture and variant only, never os.version
       (platforms/platforms.go:148 matcher.Match, on every host); 2.3.3
       (aad11006): platforms.Ordered(P) (core/transfer/image/imagestore.go:198)
       and containerd/platforms v1.0.0-rc.4 platform_windows_compat.go:143,
       which matches any os.version when P names none (`windows/amd64`);
     - the walk (import.go:197-199, images.FilterPlatforms then
       WalkNotEmpty; 2.3.3 core/transfer/local/import.go importStream) keeps
       every child with no platform or a matching one, in order, depth
       first, with no limit on the manifests (no LimitManifests): a list's
       every windows/amd64 entry is read, whatever its build, and the
       first absent one ends the import (images/image.go:338 Children reads
       manifests and indexes; config and layers are leaves);
     - each index.json entry with an io.containerd.image.name (or ref.name)
       annotation becomes an image named so, its target that descriptor
       (import.go:175); an entry without one is walked but names nothing;
       the images are created after the walk (import.go:210);
     - then each image is unpacked for P (import.go of ctr:166-170, no
       --no-unpack): its manifest for P, config and layers must be there;
       a failure here leaves the image created.
    """
    hp = host_path(path)
    if not os.path.isfile(hp):
        print('ctr: open %s: The system cannot find the file specified.' % path)
        return 1
    blobs, layout, index = {}, None, None
    import tarfile  # only ctr.exe import reads a tar; every native call starts this file
    with tarfile.open(hp, 'r:') as t:
        for m in t:
            if not m.isreg():
                continue
            data = t.extractfile(m).read()
            name = os.path.normpath(m.name)
            if name == 'oci-layout':
                layout = json.loads(data)
            elif name == 'index.json':
                index = json.loads(data)
            blobs['sha256:' + hashlib.sha256(data).hexdigest()] = data
    if not layout or layout.get('imageLayoutVersion') != '1.0.0' or index is None:
        print('ctr: unrecognized image format')
        return 1
    os_, arch = platform.split('/')

    def match(desc):
        p = desc.get('platform')
        return p is None or (p.get('os') == os_ and p.get('architecture') == arch)

    class Missing(Exception):
        pass

    def read(desc):
        d = desc['digest']
        if d not in blobs or len(blobs[d]) != desc['size']:
            raise Missing(d)
        return json.loads(blobs[d])

    def walk(desc):
        if desc['mediaType'] in MT_INDEXES:
            for c in read(desc)['manifests']:
                if match(c):
                    walk(c)
        elif desc['mediaType'] in MT_MANIFESTS:
            read(desc)

    def manifest_for(desc):
        """the manifest unpack takes for the platform (images.Manifest):
        the first matching one whose config says the platform"""
        if desc['mediaType'] in MT_INDEXES:
            for c in read(desc)['manifests']:
                if match(c):
                    m = manifest_for(c)
                    if m:
                        return m
            return None
        m = read(desc)
        cfg = read(m['config'])
        return m if cfg.get('os') == os_ and cfg.get('architecture') == arch else None

    named = []
    try:
        for desc in index.get('manifests', []):
            # named inside the handler, before FilterPlatforms filters
            # what it returns (import.go:167-197): named even when not walked
            ann = desc.get('annotations', {})
            name = ann.get('io.containerd.image.name') or ann.get('org.opencontainers.image.ref.name')
            if name:
                named.append((name, desc))
            if match(desc):
                walk(desc)
    except Missing as e:
        print('ctr: content digest %s: not found' % e.args[0])
        return 1
    store = st.setdefault('containerd_images', {}).setdefault('k8s.io', {})
    for name, desc in named:
        store[name] = {'digest': desc['digest'], 'mediaType': desc['mediaType'],
                       'size': 0, 'platform': platform}
    for name, desc in named:
        try:
            man = manifest_for(desc)
            if man is None:
                print('ctr: manifest %s: not found' % desc['digest'])
                return 1
            for d in man['layers']:
                if d['digest'] not in blobs:
                    raise Missing(d['digest'])
        except Missing as e:
            print('ctr: content digest %s: not found' % e.args[0])
            return 1
        store[name]['size'] = sum(d['size'] for d in [man['config']] + man['layers'])
        print('unpacking %s (%s)...done' % (name, desc['digest']))
    return 0


def tabwriter(rows):
    """Go's text/tabwriter as ctr sets it up (minwidth 1, padding 1, ' '),
    every cell tab-terminated."""
    w = [max(len(r[i]) for r in rows) + 1 for i in range(len(rows[0]))]
    return [''.join(c.ljust(w[i]) for i, c in enumerate(r)) for r in rows]


def ctr(st, argv):
    """ctr -n NAMESPACE images import|ls (containerd cmd/ctr/commands/images)."""
    if argv[:1] != ['-n'] or len(argv) < 4 or argv[2:3] not in (['images'], ['image'], ['i']):
        sys.stderr.write('fakewin: ctr %s is not modelled\n' % ' '.join(argv))
        return 1
    ns, verb, rest = argv[1], argv[3], argv[4:]
    svc = st['services'].get('containerd')
    if svc is None or svc['status'] != 'Running':
        sys.stderr.write('ctr: failed to dial "\\\\.\\pipe\\containerd-containerd": '
                         'context deadline exceeded\n')
        return 1
    if verb == 'import':
        if len(rest) != 3 or rest[0] != '--platform':
            sys.stderr.write('fakewin: ctr images import %s is not modelled\n' % ' '.join(rest))
            return 1
        if ns != 'k8s.io':
            return 1
        return ctr_import(st, rest[2], rest[1])
    if verb in ('ls', 'list') and not rest:
        rows = [['REF', 'TYPE', 'DIGEST', 'SIZE', 'PLATFORMS', 'LABELS']]
        for name, im in sorted(st.get('containerd_images', {}).get(ns, {}).items()):
            rows.append([name, im['mediaType'], im['digest'], '%.1f KiB' % (im['size'] / 1024.0),
                         im['platform'], '-'])
        for line in tabwriter(rows):
            print(line)
        return 0
    sys.stderr.write('fakewin: ctr images %s is not modelled\n' % verb)
    return 1


def ec2launch(st, argv):
    """EC2Launch v2's `ec2launch.exe sysprep --shutdown` (AWS EC2 User Guide,
    "Use the EC2Launch v2 agent ...", its CLI's sysprep command: prepares
    the instance with sysprep, and --shutdown shuts it down after). Only
    that verb is modelled; exit 0 (not documented). 08-sysprep.ps1
    accepts 0 only; a failed sysprep that still exits 0 is not caught."""
    if argv[:1] != ['sysprep']:
        return 1
    st['sysprep'] = ['ec2launch'] + argv
    if '--shutdown' in argv:
        st['power'] = 'off'
    return 0


def run(winpath, argv):
    st = load()
    base = winpath.replace('/', '\\').rsplit('\\', 1)[-1].lower()
    progs = {'sc.exe': lambda: sc(st, argv), 'nssm.exe': lambda: nssm(st, argv, winpath),
             'dism.exe': lambda: dism(st, argv), 'msiexec.exe': lambda: msiexec(st, argv),
             # netsh (01-windows-features: `int ipv4 set dynamicport`;
             # windows-commands/netsh): exit 0, no state modelled
             'netsh.exe': lambda: 0, 'sysprep.exe': lambda: sysprep(st, argv),
             'shutdown.exe': lambda: shutdown(st, argv),
             'net.exe': lambda: net(st, argv),
             'schtasks.exe': lambda: schtasks(st, argv),
             'ec2launch.exe': lambda: ec2launch(st, argv),
             'icacls.exe': lambda: icacls(st, argv),
             'wevtutil.exe': lambda: wevtutil(st, argv),
             'ctr.exe': lambda: ctr(st, argv),
             'setsetupcomplete.cmd': lambda: setsetupcomplete(st, argv)}
    if base not in progs:
        sys.stderr.write('fakewin: no fake for %s\n' % winpath)
        code = 9009
    else:
        code = progs[base]()
    st['calls'].append({'prog': winpath, 'argv': argv, 'exit': code})
    save(st)
    # the whole code (a Linux exit status keeps 8 bits): sim.ps1 sets
    # $LASTEXITCODE from this file
    with open(STATE + '.exit', 'w') as f:
        f.write(str(code))
    return code & 0xff if code & 0xff or not code else 1


VOLATILE = ('calls', 'service_events', 'restarts', 'sleeps', 'msiexec_busy', 'power', 'msi_installs',
            'pending_restart', 'admin_password_changes', 'package_log', 'restart_starts',
            'service_registrations')


def snapshot(state, root, out):
    """The machine after a pass: the state model and every file on C:
    (with its SHA-256), minus what a run always adds (the uploaded
    scripts in C:\\Windows\\Temp, the call log, counters)."""
    st = load(state)
    files = {}
    for d, _, names in os.walk(root):
        for n in names:
            p = os.path.join(d, n)
            win = 'C:\\' + os.path.relpath(p, root).replace('/', '\\')
            with open(p, 'rb') as f:
                files[win] = hashlib.sha256(f.read()).hexdigest()
    snap = {'state': st, 'files': files,
            'stable': {k: v for k, v in st.items() if k not in VOLATILE}}
    # a service's configuration, not whether it runs now (pass 2 starts on a
    # machine that booted with the services pass 1 registered)
    snap['stable']['services'] = {k: {a: b for a, b in v.items() if a != 'status'}
                                  for k, v in st['services'].items()}
    snap['stable']['files'] = {k: v for k, v in files.items()
                               if not k.lower().startswith('c:\\windows\\temp\\')}
    with open(out, 'w', encoding='utf-8') as f:
        json.dump(snap, f, indent=1, sort_keys=True)


def main():
    a = sys.argv[1:]
    if a[:1] == ['init'] and len(a) == 5:
        init(*a[1:])
    elif a[:1] == ['restart'] and len(a) == 2:
        restart(a[1])
    elif a[:1] == ['snapshot'] and len(a) == 4:
        global ROOT
        ROOT = a[2]
        snapshot(*a[1:])
    elif a[:1] == ['run'] and len(a) >= 2:
        sys.exit(run(a[1], a[2:]))
    else:
        sys.exit(__doc__)


if __name__ == '__main__':
    main()
