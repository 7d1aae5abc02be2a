# A container registry for bats (issue 33): Debian's docker-registry
# (distribution 2.8) on 127.0.0.1 with TLS from a test CA (make_test_ca,
# tests/lib/servers.bash), stopped by stop_servers or after
# WB_SERVER_TIMEOUT seconds, with the Windows-shaped test images of
# tests/registry/push.py pushed into it.
#
#   load ../lib/servers
#   load ../lib/registry
#   start_registry DIR CA_DIR
#       the registry's config and data in DIR/reg; exports REG (HOST:PORT)
#   reg_push DIR CA_DIR [FOREIGN_BASE FOREIGN_DIR]
#       push.py's images into $REG, their digests in DIR/digests.json.
#       FOREIGN_BASE is the https URL push.py lists foreign layers under
#       (default: nothing serves it), their bytes written to FOREIGN_DIR
#       (default DIR/foreign).
#   reg_digest DIR PATH   one digest of DIR/digests.json, PATH '|' separated
#                         (pause|list, pause|entries|10.0.20348.3207|manifest)
#   dg PATH               reg_digest of $BATS_FILE_TMPDIR
#   registry_file_setup   a bats setup_file's registry: skipped without
#                         docker-registry; the test CA in $BATS_FILE_TMPDIR/ca
#                         (exported as CA), the registry started, pushed
#   img_recipe <<YAML     $WORK/img.yaml: a Windows 2022 image with one file://
#                         artifact and the `images:` entries of stdin (indented
#                         two spaces; top-level keys after them unindented)
#   start_front NAME ARGS...  a tests/registry/regfront.py over the registry
#                         (after start_registry; CA set); exports NAME_PORTS
#                         ("FRONT BLOBS [REALM]") and NAME_LOG (NAME upper-cased)

start_registry() {
	local d="$1" ca="$2" port i
	mkdir -p "$d/reg"
	port=$(free_port)
	cat >"$d/reg/config.yml" <<-YAML
		version: 0.1
		log: {level: error}
		storage:
		  filesystem: {rootdirectory: $d/reg/data}
		http:
		  addr: 127.0.0.1:$port
		  tls: {certificate: $ca/server.crt, key: $ca/server.key}
		validation:
		  manifests:
		    urls:
		      allow: ['^https://']
	YAML
	timeout "$WB_SERVER_TIMEOUT" docker-registry serve "$d/reg/config.yml" \
		</dev/null >"$d/reg/out" 2>&1 3>&- &
	_WB_SERVER_PIDS+=("$!")
	for ((i = 0; i < 100; i++)); do
		curl -sf --cacert "$ca/ca.crt" "https://127.0.0.1:$port/v2/" >/dev/null && break
		sleep 0.1
	done
	export REG="127.0.0.1:$port"
}

reg_push() {
	local d="$1" ca="$2" foreign="${3:-https://localhost:1/foreign}" fdir="${4:-$1/foreign}"
	mkdir -p "$fdir"
	python3 "$WB_SRC/tests/registry/push.py" "https://$REG" "$ca/ca.crt" "$foreign" "$fdir" \
		>"$d/digests.json"
}

reg_digest() {
	python3 -c 'import json,sys
v=json.load(open(sys.argv[1]))
for k in sys.argv[2].split("|"): v=v[int(k)] if k.isdigit() else v[k]
print(v)' "$1/digests.json" "$2"
}

dg() { reg_digest "$BATS_FILE_TMPDIR" "$1"; }

registry_file_setup() {
	need_dep command -v docker-registry -- "docker-registry not installed (make deps)"
	export CA="$BATS_FILE_TMPDIR/ca"
	make_test_ca "$CA"
	start_registry "$BATS_FILE_TMPDIR" "$CA"
	reg_push "$BATS_FILE_TMPDIR" "$CA"
}

start_front() {
	local n="$1" d="$BATS_FILE_TMPDIR/front-$1" i N
	shift
	mkdir -p "$d"
	python3 "$WB_SRC/tests/registry/regfront.py" --registry "https://$REG" \
		--cafile "$CA/ca.crt" --cert "$CA/server.crt" --key "$CA/server.key" \
		--port-file "$d/ports" --log "$d/log" --foreign-dir "$BATS_FILE_TMPDIR/foreign" \
		--timeout "$WB_SERVER_TIMEOUT" "$@" </dev/null >"$d/out" 2>&1 3>&- &
	_WB_SERVER_PIDS+=("$!")
	for ((i = 0; i < 100; i++)); do
		[ -s "$d/ports" ] && break
		sleep 0.05
	done
	N=$(tr a-z A-Z <<<"$n")
	export "${N}_PORTS=$(cat "$d/ports")" "${N}_LOG=$d/log"
}

# img_recipe IMAGES_YAML: $WORK/img.yaml with one file:// artifact (pinned)
# and the given images: map (indented two spaces)
img_recipe() {
	mkdir -p "$WORK/components"
	printf 'demo bytes\n' >"$WORK/demo.bin"
	cat >"$WORK/components/demo.yaml" <<-YAML
		kind: component
		name: demo
		version: "1.0"
		artifacts:
		  demo:
		    url: file://$WORK/demo.bin
		    verify: {sha256: $(sha256sum "$WORK/demo.bin" | cut -d' ' -f1)}
		    install: {to: C:/k/demo.bin}
	YAML
	{
		printf 'kind: image\nname: t\nwindows: {version: "2022", iso_sha256: %s}\ncomponents:\n  demo: {}\nimages:\n' "$TEST_ISO_SHA256"
		cat
	} >"$WORK/img.yaml"
}
