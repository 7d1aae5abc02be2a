#!/usr/bin/env bats
# Issue 33 (d): the staged images imported into containerd in the VM
# (packer/scripts/06-images.ps1), through the engine tier: the shipped 2022
# image with two images (the pause image and servercore) from a real
# docker-registry on loopback TLS (tests/lib/registry.bash), built by the
# real CLI, its provisioners run as Packer runs them against the simulated
# Windows (tests/win/fakewin.py models ctr: the import reads the real tar
# and finds every blob by its content's digest; `images ls` prints
# containerd's table; nothing answers while containerd's service is
# stopped), and tests/win/check.py holds the end state to the plan: every
# image in k8s.io at its pin's manifest for the build, containerd's service as the step
# found it (pass 1: stopped, started for the import and stopped again;
# pass 2, after the restart: running, left running).

load helpers
load ../lib/servers
load ../lib/registry

export PATH="$PATH:$HOME/.dotnet/tools"

setup_file() {
	# the host DLL and template plans every tier run and build-sim below share
	# (tests/win/build-sim); tests/run passes one for the whole suite
	export WINTIER_CACHE="${WINTIER_CACHE:-$BATS_FILE_TMPDIR/engine-cache}"
	registry_file_setup
}

teardown_file() { stop_servers; }


# tier < OVERRIDE_BODY: the shipped 2022 image (sc, qemu, two passes) with
# an override of the given keys through the engine tier, in $WORK/tier; the
# registry's CA through SSL_CERT_FILE. The tier's fixtures drop the shipped
# pause image (images.pause.enabled: false): an override's pause says
# enabled: true
tier() {
	{
		printf 'kind: override\n'
		cat
	} >"$WORK/images.yaml"
	SSL_CERT_FILE="$CA/ca.crt" WINTIER_OVERRIDE="$WORK/images.yaml" WINTIER_MANAGERS=sc \
		WINTIER_BUILDERS=qemu run bash "$WB_SRC/tests/win/run" -p 2 -w "$WORK/tier" 2022
	echo "$output"
}

@test "two images, the pause image one of them, imported into containerd at their pins' manifests for the build; containerd left as found" {
	need_pwsh || return 1
	tier <<-YAML
		node: {pause_image: $REG/pause:3.10}
		images:
		  pause: {name: $REG/pause, tag: "3.10", digest: "$(dg 'pause|list')", enabled: true}
		  servercore: {name: $REG/windows/servercore, tag: ltsc, digest: "$(dg 'servercore|list')"}
	YAML
	assert_status 0
	assert_output_has "1 passed, 0 failed"
	local sim="$WORK/tier/2022-sc/sim/qemu" out="$WORK/tier/2022-sc/out/windows-2022-containerd"
	# the step parses as PowerShell and passes the 5.1 lint (tests/ps/)
	run node "$WB_SRC/tests/ps/psparse.cjs" "$out/packer/scripts/06-images.ps1"
	assert_status 0
	run node "$WB_SRC/tests/ps/lint51.cjs" "$out/packer/scripts/06-images.ps1"
	echo "$output"
	assert_status 0
	# the step is in the template, after the services and the CNI, before
	# provenance (which removes the payload) and sysprep; Packer (Debian's
	# 1.6.6) reads it (validate -syntax-only), and it is fmt-clean
	grep -A1 '06-cni.ps1",$' "$out/packer/windows-2022-containerd.pkr.hcl" | grep -q '06-images.ps1",$'
	grep -A1 '06-images.ps1",$' "$out/packer/windows-2022-containerd.pkr.hcl" | grep -q '07-provenance.ps1",$'
	run packer validate -syntax-only "$out/packer"
	assert_status 0
	run packer fmt -check "$out/packer"
	assert_status 0
	# containerd holds each at its pin's manifest for 2022 (the tar's
	# index.json names it: issue 40, docs/node.md "Importing the staged
	# images")
	python3 - "$sim" "$REG" "$(dg 'pause|entries|10.0.20348.3207|manifest')" \
		"$(dg 'servercore|entries|10.0.20348.1|manifest')" <<-'PY'
		import json, os, sys
		sim, reg, pause, core = sys.argv[1:]
		want = {reg + "/pause:3.10": pause, reg + "/windows/servercore:ltsc": core}
		for n in (1, 2):
		    st = json.load(open(os.path.join(sim, "pass%d.json" % n)))["state"]
		    got = {k: v["digest"] for k, v in st["containerd_images"]["k8s.io"].items()}
		    assert got == want, (n, got)
		    # containerd found stopped in pass 1 (the build's restart comes
		    # before the services step): started for the import, stopped
		    # again; running in pass 2 (after the restart): left running
		    assert st["services"]["containerd"]["status"] == ("Stopped" if n == 1 else "Running"), st["services"]["containerd"]
		st = json.load(open(os.path.join(sim, "pass2.json")))["state"]
		ev = [(e["verb"], e["name"]) for e in st["service_events"]]
		assert ev == [("start", "containerd"), ("stop", "containerd")], ev
		# pass 1 waited for containerd's pipe (it appears a moment after the start)
		st1 = json.load(open(os.path.join(sim, "pass1.json")))["state"]
		assert st1["sleeps"] >= 2 and st1["services"]["containerd"]["pipe_wait"] == 0, st1["sleeps"]
		# import, in key order, for windows/amd64, into k8s.io; then ls
		ctr = [c["argv"] for c in st["calls"] if c["prog"].lower().endswith("\\ctr.exe")]
		tars = ["C:\\ProgramData\\winbuild\\images\\%s.tar" % k for k in ("pause", "servercore")]
		want_calls = [["-n", "k8s.io", "images", "import", "--platform", "windows/amd64", t] for t in tars]
		want_calls.append(["-n", "k8s.io", "images", "ls"])
		assert ctr == want_calls * 2, ctr
		# the node's sandbox image is the pre-pulled one
		conf = open(os.path.join(sim, "C", "Program Files", "containerd", "config.toml")).read()
		assert "sandbox = '%s/pause:3.10'" % reg in conf, conf
	PY
}

@test "an image containerd does not hold at its pin fails the step, naming it; containerd stopped again" {
	need_pwsh || return 1
	# the plan refuses two entries of one name (images_components.bats), so
	# the pin rendered into the step is changed, as a tar that imports
	# another image would: the step must compare, not trust the import
	tier <<-YAML
		node: {pause_image: $REG/pause:3.10}
		images:
		  pause: {name: $REG/pause, tag: "3.10", digest: "$(dg 'pause|list')", enabled: true}
	YAML
	assert_status 0
	local out="$WORK/tier/2022-sc/out/windows-2022-containerd" other man
	man=$(dg 'pause|entries|10.0.20348.3207|manifest')
	other=$(dg 'pause|entries|10.0.17763.6893|manifest')
	sed -i "s/Digest = '$man'/Digest = '$other'/" "$out/packer/scripts/06-images.ps1"
	grep -q "Digest = '$other'" "$out/packer/scripts/06-images.ps1"
	run bash "$WB_SRC/tests/win/build-sim" "$out" "$WORK/tier/2022-sc/recipe.json" "$WORK/sim" 1 changed qemu
	echo "$output"
	assert_status 1
	assert_output_has "not ok changed qemu: pass 1: 06-images.ps1 exited 1"
	grep -q "image pause: '$REG/pause:3.10' resolves to $man in containerd, not to $other, the manifest of the pinned $(dg 'pause|list') for this Windows build" \
		"$WORK/sim/qemu/log.txt"
	# containerd stopped again on the way out
	python3 - "$WORK/sim/qemu/pass1.json" <<-'PY'
		import json, sys
		st = json.load(open(sys.argv[1]))["state"]
		assert st["services"]["containerd"]["status"] == "Stopped", st["services"]["containerd"]
		assert [(e["verb"], e["name"]) for e in st["service_events"]] == [("start", "containerd"), ("stop", "containerd")]
	PY
}

@test "without images: no import step in the template, no 06-images.ps1" {
	need_pwsh || return 1
	local out="$WORK/tier/2022-sc/out/windows-2022-containerd"
	tier </dev/null
	assert_status 0
	[ ! -e "$out/packer/scripts/06-images.ps1" ]
	! grep -q 06-images "$out/packer/windows-2022-containerd.pkr.hcl" || false
	! grep -q '"ctr.exe\|\\ctr.exe' "$WORK/tier/2022-sc/sim/qemu/state.json" || false
}
