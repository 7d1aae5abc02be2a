# Test servers for bats: nginx (HTTP + HTTPS with a throwaway CA) for the
# happy path, faultd (tests/lib/faultd.py) for failure paths.
#
# Load from a bats file with:   load ../lib/servers
#
# Every server binds to 127.0.0.1 only (or [::1] when asked), lives in a temp
# dir, and stops itself after WB_SERVER_TIMEOUT seconds (default 1800: a file that
# starts its server in setup_file can run over 10 minutes with other files
# beside it under tests/run -j) even if
# teardown never runs. Typical use:
#
#   setup_file() {
#       load ../lib/servers           # (or load at file level)
#       make_test_ca "$BATS_FILE_TMPDIR/ca"
#       start_nginx "$BATS_FILE_TMPDIR/www" "$BATS_FILE_TMPDIR/ca"
#       start_faultd "$BATS_FILE_TMPDIR/www"
#   }
#   teardown_file() { stop_servers; }
#
# Functions:
#   make_test_ca DIR            openssl, EC P-256, at test time. Writes in DIR:
#       ca.key ca.crt           the test CA (curl --cacert; note libcurl itself
#                               ignores CURL_CA_BUNDLE: winbuild needs CURLOPT_CAINFO)
#       server.key              the key of every server cert below
#       server.crt              CN/SAN localhost, IP 127.0.0.1, IP ::1; valid now
#       expired.crt             same names, expired (2020-01-01..2020-01-02)
#       wrong.crt               SAN DNS:wrong.example only; valid now
#   start_nginx ROOT [CERTDIR [CERT]]
#                               nginx serving ROOT on http://127.0.0.1:$NGINX_PORT/
#                               and, with CERTDIR, https://localhost:$NGINX_TLS_PORT/
#                               using CERTDIR/CERT.crt (CERT: server (default),
#                               expired or wrong) and CERTDIR/server.key.
#                               NGINX_IPV6=1 also listens on [::1], same ports.
#                               WB_NGINX_PORT=N: HTTP on port N (no retry on
#                               another port; for outputs that record the URL).
#                               WB_NGINX_INCLUDE=FILE: included in each server
#                               (winbuild mirror's nginx-locations.conf).
#                               Exports NGINX_PORT NGINX_TLS_PORT NGINX_LOG
#                               NGINX_PID NGINX_DIR. One process (master_process
#                               off), so it works as root or not. NGINX_LOG lines:
#                                 "GET /a.bin HTTP/1.1" 206 "bytes=10-" 1014
#                               (request line, status, Range header or -, body bytes)
#   stop_nginx                  stop the nginx named by NGINX_PID
#   start_faultd ROOT [BIND]    faultd serving ROOT on 127.0.0.1 (or BIND=::1).
#                               Exports FAULTD_PORT FAULTD_LOG FAULTD_PID FAULTD_URL
#                               (http://127.0.0.1:PORT) FAULTD_DIR. Fault paths and
#                               log format: see tests/lib/faultd.py.
#   stop_faultd                 stop the faultd named by FAULTD_PID
#   start_tinyproxy [USER PASS] Debian's tinyproxy on 127.0.0.1 (BasicAuth with
#                               USER PASS). Exports PROXY_PORT PROXY_LOG (its
#                               "Request (file descriptor N): GET URL HTTP/1.1"
#                               and "CONNECT host:port" lines)
#   stop_servers                stop every server started from this shell and
#                               not yet stopped: in a test's teardown, only what
#                               that test started; in teardown_file, setup_file's.
#   free_port [ADDR]            print a currently free TCP port on ADDR (127.0.0.1)
#   closed_port                 print a port with nothing listening on 127.0.0.1
#                               (for "upstream unreachable" tests)
#
# Background servers close fd 3 and send their output to files, so bats never
# waits on them.

: "${WB_SERVER_TIMEOUT:=1800}"
WB_NGINX_BIN="${WB_NGINX_BIN:-/usr/sbin/nginx}"
_WB_SERVERS_LIB="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# pids of servers this shell started and has not stopped, for stop_servers
# (kept if this file is loaded twice in one shell)
declare -p _WB_SERVER_PIDS >/dev/null 2>&1 || _WB_SERVER_PIDS=()

_wb_python() {
	if [ -x /usr/bin/python3 ]; then echo /usr/bin/python3; else command -v python3; fi
}

_wb_tmpdir() {
	# a fresh temp dir for one server, under the bats file/test temp dir if any
	local base="${BATS_TEST_TMPDIR:-${BATS_FILE_TMPDIR:-${TMPDIR:-/tmp}}}"
	mktemp -d "$base/$1.XXXXXX"
}

# shellcheck disable=SC2120 # ADDR is optional
free_port() {
	local addr="${1:-127.0.0.1}"
	"$(_wb_python)" - "$addr" <<-'EOF'
		import socket, sys
		a = sys.argv[1].strip("[]")
		s = socket.socket(socket.AF_INET6 if ":" in a else socket.AF_INET)
		s.bind((a, 0))
		print(s.getsockname()[1])
		s.close()
	EOF
}

closed_port() {
	local p i
	for i in 1 2 3 4 5 6 7 8 9 10; do
		p=$(free_port) || return 1
		# nothing must answer on it
		if ! (exec 9<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
			echo "$p"
			return 0
		fi
	done
	echo "closed_port: could not find a closed port" >&2
	return 1
}

make_test_ca() {
	local d="$1"
	mkdir -p "$d" || return 1
	(
		set -e
		cd "$d"
		ec=(-newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes)
		# CA
		openssl req -x509 "${ec[@]}" -keyout ca.key -out ca.crt -days 30 \
			-subj "/CN=winbuild test CA" \
			-addext "basicConstraints=critical,CA:TRUE" \
			-addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
		# one key and CSR for all server certs
		openssl req -new "${ec[@]}" -keyout server.key -out server.csr \
			-subj "/CN=localhost" 2>/dev/null
		cat >ext-good.cnf <<-'EOF'
			basicConstraints=CA:FALSE
			keyUsage=critical,digitalSignature
			extendedKeyUsage=serverAuth
			subjectAltName=DNS:localhost,IP:127.0.0.1,IP:::1
		EOF
		cat >ext-wrong.cnf <<-'EOF'
			basicConstraints=CA:FALSE
			keyUsage=critical,digitalSignature
			extendedKeyUsage=serverAuth
			subjectAltName=DNS:wrong.example
		EOF
		openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial \
			-days 30 -extfile ext-good.cnf -out server.crt 2>/dev/null
		openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial \
			-days 30 -extfile ext-wrong.cnf -out wrong.crt 2>/dev/null
		# expired: "openssl x509 -req" cannot set dates on OpenSSL 3.0; "openssl ca" can
		mkdir -p ca-db
		: >ca-db/index.txt
		echo 1000 >ca-db/serial
		cat >ca.cnf <<-EOF
			[ca]
			default_ca = test
			[test]
			dir = $PWD/ca-db
			database = \$dir/index.txt
			serial = \$dir/serial
			new_certs_dir = \$dir
			certificate = $PWD/ca.crt
			private_key = $PWD/ca.key
			default_md = sha256
			policy = anything
			unique_subject = no
			copy_extensions = none
			[anything]
			commonName = supplied
		EOF
		openssl ca -batch -config ca.cnf -in server.csr -out expired.crt -notext \
			-startdate 20200101000000Z -enddate 20200102000000Z \
			-extfile ext-good.cnf 2>/dev/null
	) || { echo "make_test_ca: openssl failed in $d" >&2; return 1; }
}

# _wb_wait_ours PID LOG ERRLOG URL [CURLOPTS...]: wait (up to 5 s) until URL
# answers and the request shows up in LOG, i.e. it was our server that
# answered (not another one that won a race for the port). Fails early if PID
# dies or ERRLOG says the port is taken (nginx would retry bind() for 2.5 s).
_wb_wait_ours() {
	local pid="$1" log="$2" errlog="$3" url="$4" i probe
	shift 4
	probe="/__wb_probe_$$_$RANDOM$RANDOM"
	for ((i = 0; i < 100; i++)); do
		kill -0 "$pid" 2>/dev/null || return 1
		grep -qF 'Address already in use' "$errlog" 2>/dev/null && return 1
		curl -s -o /dev/null --max-time 1 "$@" "$url$probe" 2>/dev/null || true
		grep -qF "$probe" "$log" 2>/dev/null && return 0
		sleep 0.05
	done
	return 1
}

# _wb_kill PID: TERM, wait up to 3 s, then KILL
_wb_kill() {
	local pid="$1" i
	[ -n "$pid" ] || return 0
	kill -TERM "$pid" 2>/dev/null || return 0
	for ((i = 0; i < 60; i++)); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.05
	done
	kill -KILL "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	return 0
}

_wb_forget() {
	local p keep=()
	for p in "${_WB_SERVER_PIDS[@]}"; do
		[ "$p" = "$1" ] || keep+=("$p")
	done
	_WB_SERVER_PIDS=("${keep[@]}")
}

# _wb_nginx_conf DIR LOG_FORMAT HTTP_BODY: DIR/nginx.conf, one process
# (master_process off, which also means no switch to "user nobody" when run
# as root: the root dir may be 0700), pid, error log and temp paths in DIR,
# access-log format "wb" = LOG_FORMAT, then HTTP_BODY inside http { }
_wb_nginx_conf() {
	local dir=$1 fmt=$2 body=$3
	cat >"$dir/nginx.conf" <<-EOF
		daemon off;
		master_process off;
		worker_processes 1;
		pid $dir/nginx.pid;
		error_log $dir/error.log warn;
		events { worker_connections 256; }
		http {
			log_format wb '$fmt';
			client_body_temp_path $dir/tmp/body;
			proxy_temp_path $dir/tmp/proxy;
			fastcgi_temp_path $dir/tmp/fastcgi;
			uwsgi_temp_path $dir/tmp/uwsgi;
			scgi_temp_path $dir/tmp/scgi;
			default_type application/octet-stream;
			log_not_found off;
			keepalive_timeout 10;
			$body
		}
	EOF
}

# _wb_nginx_launch DIR: nginx on DIR/nginx.conf in the background, its
# timeout(1) wrapper's pid in _WB_NGINX_LAUNCHED (timeout is the hard stop:
# nginx gets TERM after WB_SERVER_TIMEOUT s)
_wb_nginx_launch() {
	timeout -k 5 "$WB_SERVER_TIMEOUT" "$WB_NGINX_BIN" -p "$1" -c "$1/nginx.conf" \
		-e "$1/error.log" </dev/null >"$1/stdout" 2>&1 3>&- &
	_WB_NGINX_LAUNCHED=$!
}

start_nginx() {
	local root certdir="${2:-}" cert="${3:-server}" dir pid ok v6=""
	root=$(cd "$1" && pwd) || { echo "start_nginx: no root dir $1" >&2; return 1; }
	[ -x "$WB_NGINX_BIN" ] || { echo "start_nginx: $WB_NGINX_BIN missing (apt-get install nginx-light)" >&2; return 1; }
	if [ -n "$certdir" ]; then
		certdir=$(cd "$certdir" && pwd) || return 1
		[ -f "$certdir/$cert.crt" ] || { echo "start_nginx: no $certdir/$cert.crt" >&2; return 1; }
	fi
	[ "${NGINX_IPV6:-0}" = 1 ] && v6=1
	dir=$(_wb_tmpdir nginx) || return 1
	mkdir -p "$dir/tmp"
	for _ in 1 2 3 4 5; do
		local port tport="" listen
		if [ -n "${WB_NGINX_PORT:-}" ]; then port=$WB_NGINX_PORT; else port=$(free_port) || return 1; fi
		listen="listen 127.0.0.1:$port;"
		[ -n "$v6" ] && listen+=" listen [::1]:$port;"
		local tls=""
		if [ -n "$certdir" ]; then
			tport=$(free_port) || return 1
			[ "$tport" = "$port" ] && continue
			tls="
	server {
		listen 127.0.0.1:$tport ssl;
		${v6:+listen [::1]:$tport ssl;}
		server_name localhost;
		ssl_certificate $certdir/$cert.crt;
		ssl_certificate_key $certdir/server.key;
		root $root;
		${WB_NGINX_INCLUDE:+include $WB_NGINX_INCLUDE;}
	}"
		fi
		_wb_nginx_conf "$dir" '"$request" $status "$http_range" $body_bytes_sent' "
			access_log $dir/access.log wb;
			types { text/plain txt; application/octet-stream bin; }
			sendfile on;
			server {
				$listen
				server_name localhost;
				root $root;
				${WB_NGINX_INCLUDE:+include $WB_NGINX_INCLUDE;}
			}$tls"
		: >"$dir/access.log"
		: >"$dir/error.log"
		rm -f "$dir/nginx.pid"
		_wb_nginx_launch "$dir"
		pid=$_WB_NGINX_LAUNCHED
		ok=""
		if _wb_wait_ours "$pid" "$dir/access.log" "$dir/error.log" "http://127.0.0.1:$port"; then
			ok=1
			if [ -n "$tport" ] &&
				! _wb_wait_ours "$pid" "$dir/access.log" "$dir/error.log" "https://127.0.0.1:$tport" -k; then
				ok=""
			fi
		fi
		if [ -n "$ok" ] && kill -0 "$pid" 2>/dev/null; then
			export NGINX_PORT="$port" NGINX_TLS_PORT="$tport" NGINX_DIR="$dir"
			export NGINX_LOG="$dir/access.log"
			export NGINX_PID
			NGINX_PID=$(cat "$dir/nginx.pid" 2>/dev/null || echo "$pid")
			export _NGINX_WRAPPER_PID="$pid"
			_WB_SERVER_PIDS+=("$NGINX_PID" "$pid")
			: >"$NGINX_LOG" # drop the readiness probes (nginx appends)
			return 0
		fi
		_wb_kill "$pid"
		# a lost race on the port: try other ports; anything else is fatal
		[ -z "${WB_NGINX_PORT:-}" ] || break
		grep -q 'Address already in use' "$dir/error.log" "$dir/stdout" 2>/dev/null || break
	done
	echo "start_nginx: nginx did not start; config $dir/nginx.conf; log:" >&2
	cat "$dir/error.log" "$dir/stdout" >&2 2>/dev/null
	return 1
}

stop_nginx() {
	[ -n "${NGINX_PID:-}" ] || return 0
	_wb_kill "$NGINX_PID"
	_wb_forget "$NGINX_PID"
	if [ -n "${_NGINX_WRAPPER_PID:-}" ]; then
		_wb_kill "$_NGINX_WRAPPER_PID"
		_wb_forget "$_NGINX_WRAPPER_PID"
	fi
	unset NGINX_PID _NGINX_WRAPPER_PID
}

# _wb_wait_port_file WHO PID DIR: wait (up to 5 s) for the server PID
# started to write DIR/port; else show DIR/stderr, stop it and fail. On
# success PID is one of this shell's servers (stop_servers).
_wb_wait_port_file() {
	local who="$1" pid="$2" dir="$3" i
	for ((i = 0; i < 100; i++)); do
		[ -s "$dir/port" ] && break
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.05
	done
	if ! [ -s "$dir/port" ]; then
		echo "$who: the server did not start:" >&2
		cat "$dir/stderr" >&2
		_wb_kill "$pid"
		return 1
	fi
	_WB_SERVER_PIDS+=("$pid")
}

start_faultd() {
	local root="$1" bind="${2:-127.0.0.1}" dir pid
	[ -d "$root" ] || { echo "start_faultd: no root dir $root" >&2; return 1; }
	dir=$(_wb_tmpdir faultd) || return 1
	"$(_wb_python)" "$_WB_SERVERS_LIB/faultd.py" --root "$root" --bind "$bind" \
		--port 0 --port-file "$dir/port" --log "$dir/access.log" \
		--timeout "$WB_SERVER_TIMEOUT" </dev/null >"$dir/stdout" 2>"$dir/stderr" 3>&- &
	pid=$!
	_wb_wait_port_file start_faultd "$pid" "$dir" || return 1
	export FAULTD_PORT FAULTD_PID="$pid" FAULTD_LOG="$dir/access.log" FAULTD_DIR="$dir"
	FAULTD_PORT=$(cat "$dir/port")
	if [[ "$bind" == *:* ]]; then
		export FAULTD_URL="http://[$bind]:$FAULTD_PORT"
	else
		export FAULTD_URL="http://$bind:$FAULTD_PORT"
	fi
}

stop_faultd() {
	[ -n "${FAULTD_PID:-}" ] || return 0
	_wb_kill "$FAULTD_PID"
	_wb_forget "$FAULTD_PID"
	unset FAULTD_PID
}

# start_tinyproxy [BASICAUTH_USER BASICAUTH_PASS]: Debian's tinyproxy, an
# HTTP proxy (CONNECT for https) on 127.0.0.1, logging every request line;
# sets PROXY_PORT, PROXY_LOG; stopped by stop_servers or after
# WB_SERVER_TIMEOUT seconds
start_tinyproxy() {
	local dir port i k
	command -v tinyproxy >/dev/null 2>&1 || { echo "start_tinyproxy: tinyproxy missing (make deps)" >&2; return 1; }
	dir=$(_wb_tmpdir tinyproxy) || return 1
	for i in 1 2 3 4 5; do
		port=$(free_port) || return 1
		{
			printf 'Port %s\nListen 127.0.0.1\nTimeout 30\nMaxClients 20\n' "$port"
			printf 'LogFile "%s/tinyproxy.log"\nLogLevel Info\nPidFile "%s/tinyproxy.pid"\n' "$dir" "$dir"
			printf 'Allow 127.0.0.1\nDisableViaHeader Yes\n'
			[ $# -lt 2 ] || printf 'BasicAuth %s %s\n' "$1" "$2"
		} >"$dir/tinyproxy.conf"
		: >"$dir/tinyproxy.log"
		timeout -k 5 "$WB_SERVER_TIMEOUT" tinyproxy -d -c "$dir/tinyproxy.conf" \
			</dev/null >"$dir/stdout" 2>&1 3>&- &
		_WB_SERVER_PIDS+=("$!")
		# ours when it answers on the port and says so in its own log
		for ((k = 0; k < 100; k++)); do
			if (exec 9<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null &&
			   grep -q 'listening on' "$dir/tinyproxy.log" "$dir/stdout" 2>/dev/null; then
				export PROXY_PORT="$port" PROXY_LOG="$dir/tinyproxy.log"
				return 0
			fi
			kill -0 "$!" 2>/dev/null || break
			sleep 0.05
		done
	done
	echo "start_tinyproxy: did not start (see $dir)" >&2
	return 1
}

# start_rekor ARGS...: the fake Rekor v1 API (tests/sigstore/fakerekor.py)
# with these entries on loopback; sets REKOR (its URL), REKOR_PID, REKOR_LOG
start_rekor() {
	local dir i
	dir=$(_wb_tmpdir rekor) || return 1
	"$(_wb_python)" "$_WB_SERVERS_LIB/../sigstore/fakerekor.py" --port-file "$dir/port" "$@" \
		</dev/null >/dev/null 2>"$dir/log" 3>&- &
	REKOR_PID=$!
	_WB_SERVER_PIDS+=("$REKOR_PID")
	for ((i = 0; i < 100; i++)); do
		[ -s "$dir/port" ] && break
		sleep 0.05
	done
	[ -s "$dir/port" ] || { cat "$dir/log" >&2; return 1; }
	REKOR="http://127.0.0.1:$(cat "$dir/port")"
	REKOR_LOG="$dir/log"
}

stop_servers() {
	local p
	# only what this shell started (a test's teardown leaves the servers of
	# setup_file alone); nginx's own pid comes before its timeout wrapper
	for p in "${_WB_SERVER_PIDS[@]}"; do
		_wb_kill "$p"
		[ "$p" = "${NGINX_PID:-}" ] && unset NGINX_PID
		[ "$p" = "${_NGINX_WRAPPER_PID:-}" ] && unset _NGINX_WRAPPER_PID
		[ "$p" = "${FAULTD_PID:-}" ] && unset FAULTD_PID
	done
	_WB_SERVER_PIDS=()
	return 0
}
