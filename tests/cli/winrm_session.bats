#!/usr/bin/env bats
# Issue 40 item 2: no WinRM reset runs inside a Packer WinRM session, on any
# builder. The emitted template is read as Packer reads it
# (tests/win/hclplan.cjs: hcl2json and `packer inspect`): for every source,
# every powershell provisioner that applies to it (its scripts and inline
# lines) and the source's shutdown_command (its -File is the copy of
# 08-sysprep.ps1 that mode prepare leaves) are what Packer runs over WinRM;
# none may turn WinRM's Basic authentication off, remove a listener, a
# certificate, a WinRM firewall rule or LocalAccountTokenFilterPolicy, or
# stop WinRM. The reset lives in scripts/firstboot-winrm.ps1, which only a
# file provisioner copies, for every builder but azure-arm, and which
# 08-sysprep.ps1 registers as a startup task.
load helpers

setup() {
	common_setup
	packer_setup staged
	R="$WB_SRC/recipes/windows-2022-containerd.yaml"
	PK=out/windows-2022-containerd/packer
}

# session_check PACKER_DIR: exit 1 naming each reset Packer would run
session_check() {
	node "$WB_SRC/tests/win/hclplan.cjs" "$1" >plan.json || return 2
	python3 - "$1" plan.json <<-'PY'
	import json, os, re, sys
	pk, plan = sys.argv[1], json.load(open(sys.argv[2]))
	# what turns WinRM (as Packer reaches it) off or away
	RESETS = [r"WSMan:\\localhost\\Service\\Auth\\Basic'?\s+-Value\s+\$false",
	          r"winrm(\.cmd)?\s+set\s+winrm/config/service/auth",
	          r"winrm(\.cmd)?\s+delete", r"Remove-Item\b.*\$l\.PSPath", r"WSMan:\\localhost\\Listener.*Remove-Item",
	          r"Remove-NetFirewallRule", r"Disable-PSRemoting", r"(Stop|Restart)-Service\s+(-Name\s+)?'?WinRM",
	          r"LocalAccountTokenFilterPolicy", r"Cert:\\LocalMachine\\My\\'"]
	def code(text):
	    # PowerShell comments are not run
	    return '\n'.join(l for l in text.splitlines() if not l.lstrip().startswith('#'))
	def resets(text):
	    return [p for p in RESETS if re.search(p, code(text), re.I)]
	def local(p):
	    return p.replace('${path.root}', pk)
	bad, seen = [], 0
	for src, s in plan['sources'].items():
	    for prov in plan['provisioners']:
	        only, exc = prov.get('only', []), prov.get('except', [])
	        if (only and src not in only) or src in exc or prov['type'] != 'powershell':
	            continue
	        for sc in ([prov['script']] if 'script' in prov else []) + prov.get('scripts', []):
	            seen += 1
	            for r in resets(open(local(sc), encoding='utf-8').read()):
	                bad.append('%s: provisioner %d runs %s: %s' % (src, prov['index'], os.path.basename(sc), r))
	        for r in resets('\n'.join(prov.get('inline', []))):
	            bad.append('%s: provisioner %d inline: %s' % (src, prov['index'], r))
	    if s['shutdown_command']:
	        m = re.search(r'-File\s+(\S+)', s['shutdown_command'])
	        assert m and m.group(1) == 'C:/ProgramData/winbuild/sysprep.ps1', s['shutdown_command']
	        for r in resets(open(os.path.join(pk, 'scripts', '08-sysprep.ps1'), encoding='utf-8').read()):
	            bad.append('%s: shutdown_command runs 08-sysprep.ps1: %s' % (src, r))
	print('%d sources, %d script runs read' % (len(plan['sources']), seen))
	for b in bad:
	    print('RESET IN A PACKER SESSION: ' + b)
	sys.exit(1 if bad else 0)
	PY
}

@test "issue 40: no WinRM reset runs in anything Packer runs over WinRM, on any of the six builders; the reset is a first-boot task's" {
	need_dep command -v packer -- "packer not installed (make deps)"
	need_dep test -d "$WB_SRC/tests/win/node_modules/@cdktf/hcl2json" -- "tests/win/node_modules (make deps)"
	python3 "$WB_SRC/tests/cli/fixtures/emit/make-staged.py" out windows-2022-containerd 2022
	wb emit "$R" --set 'packer.builders=[azure-arm, amazon-ebs, oracle-oci, qemu, vsphere-iso, hyperv-iso]' \
		--set windows.desktop_experience=true
	assert_status 0
	run session_check "$PK"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == "6 sources, "* ]]
	# the reset itself: in the file a file provisioner copies for every
	# builder but azure-arm, run by the task 08-sysprep.ps1 registers
	F=$PK/scripts/firstboot-winrm.ps1
	grep -qF "Set-Item -Path 'WSMan:\localhost\Service\Auth\Basic' -Value \$false" "$F"
	grep -qF "Remove-ItemProperty -Path \$policies -Name 'LocalAccountTokenFilterPolicy'" "$F"
	python3 - plan.json <<-'PY'
	import json, sys
	plan = json.load(open(sys.argv[1]))
	fb = [p for p in plan['provisioners'] if p['type'] == 'file' and p['source'].endswith('/scripts/firstboot-winrm.ps1')]
	assert len(fb) == 1, fb
	assert sorted(fb[0]['only']) == sorted(['amazon-ebs.node', 'oracle-oci.node', 'qemu.node', 'vsphere-iso.node', 'hyperv-iso.node']), fb
	assert fb[0]['destination'] == 'C:\\ProgramData\\winbuild\\firstboot-winrm.ps1', fb
	ps = [p for p in plan['provisioners'] if p['type'] == 'powershell' and any('firstboot-winrm' in s for s in p.get('scripts', []))]
	assert not ps, ps
	# copied before the sysprep step that registers it
	sysprep = min(p['index'] for p in plan['provisioners'] if any('08-sysprep' in s for s in p.get('scripts', [])))
	assert fb[0]['index'] < sysprep, (fb[0]['index'], sysprep)
	PY
	grep -qF "'/Create', '/F', '/TN', \$FirstBootTask, '/SC', 'ONSTART', '/RU', 'SYSTEM'" "$PK/scripts/08-sysprep.ps1"
	# the check finds a reset where it would run: put Basic off back into
	# 08-sysprep.ps1's oci branch (the issue's defect)
	perl -0pi -e 's/(\n    Register-FirstBootWinRM\n    Invoke-Native -FilePath \$Sysprep)/\n    Set-Item -Path '"'"'WSMan:\\localhost\\Service\\Auth\\Basic'"'"' -Value \$false$1/' "$PK/scripts/08-sysprep.ps1"
	run session_check "$PK"
	[ "$status" -eq 1 ]
	assert_output_has "RESET IN A PACKER SESSION: oracle-oci.node: provisioner"
	assert_output_has "RESET IN A PACKER SESSION: qemu.node: shutdown_command runs 08-sysprep.ps1"
}
