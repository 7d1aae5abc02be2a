#!/usr/bin/env bats
# Outputs other programs read are built from checked values (issue 41
# item 4, docs/hardening.md): a manifest's mediaType is a value a registry
# chose; `winbuild mirror` writes it into nginx-locations.conf only when it
# is a media type (RFC 6838 type/subtype[+suffix]), else refuses the
# mirror, exit 1, and writes no nginx config. The tree is served by nginx
# over TLS from the test CA (tests/registry/hostile_tree.py).
load helpers
load ../lib/servers
load ../lib/registry

setup_file() {
	export CA="$BATS_FILE_TMPDIR/ca"
	make_test_ca "$CA"
}

teardown_file() { stop_servers; }

setup() { common_setup; }
teardown() { stop_servers; }

# the image REPO whose build manifest says MEDIA_TYPE, served from $WORK/srv,
# and img.yaml pinning it (its artifact from the same server)
hostile_image() {
	local list
	list=$(python3 "$WB_SRC/tests/registry/hostile_tree.py" "$WORK/srv" "$1" "$2")
	WB_NGINX_INCLUDE="$WORK/srv/locations.conf" start_nginx "$WORK/srv" "$CA"
	img_recipe <<-YAML
		  pause:
		    name: localhost:$NGINX_TLS_PORT/$1
		    tag: "1"
		    digest: $list
	YAML
	cp "$WORK/demo.bin" "$WORK/srv/"
	sed -i "s|url: file://.*|url: https://localhost:$NGINX_TLS_PORT/demo.bin|" "$WORK/components/demo.yaml"
}

@test "mirror refuses a manifest whose mediaType would be nginx syntax: exit 1, the image and value named, no nginx config" {
	hostile_image evil $'application/x; }\n location / { alias /etc/; }\n location = /x { default_type a'
	wb mirror img.yaml exported --cacert "$CA/ca.crt"
	assert_status 1
	assert_output_has "images.pause"
	assert_output_has "is not a media type"
	assert_output_has 'application/x; }\n location / { alias /etc/; }'
	[ -z "$(find exported -name nginx-locations.conf 2>/dev/null)" ]
}

@test "mirror refuses a mediaType with a space or quote, and one without a subtype" {
	for mt in 'application/x default_type' "application/x'" 'application' 'application/' '/json' 'a/b/c'; do
		rm -rf srv exported "$WINBUILD_CACHE"
		stop_servers
		hostile_image evil "$mt"
		wb mirror img.yaml exported --cacert "$CA/ca.crt"
		[ "$status" -eq 1 ] || { echo "accepted: $mt"; echo "$output"; false; }
		[ -z "$(find exported -name nginx-locations.conf 2>/dev/null)" ]
	done
}

@test "mirror keeps a well-formed media type, and real nginx accepts the config it writes" {
	hostile_image fine 'application/vnd.example.thing.v1+json'
	wb mirror img.yaml exported --cacert "$CA/ca.crt"
	assert_status 0
	conf=$(find exported -name nginx-locations.conf)
	[ -n "$conf" ]
	grep -q 'default_type application/vnd.example.thing.v1+json;' "$conf"
	printf 'events {}\nerror_log %s/e.log;\npid %s/n.pid;\nhttp { server { listen 127.0.0.1:1; include %s; } }\n' \
		"$WORK" "$WORK" "$WORK/$conf" >t.conf
	run "$WB_NGINX_BIN" -t -c "$WORK/t.conf" -p "$WORK"
	assert_status 0
}
