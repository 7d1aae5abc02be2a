# Servers that want credentials, for tests/cli/creds.bats (issue 31). Load
# after tests/lib/servers.bash (make_test_ca, free_port, _wb_kill...).
#
#   start_creds_servers DIR CA
#       one nginx, HTTPS with the test CA's server cert, every server on
#       127.0.0.1 or localhost, each with its own access log that records
#       the Authorization header, the query and the client certificate:
#         BASIC_URL  https://localhost:P   auth_basic (user $BASIC_USER,
#                    password $BASIC_PASS); /redir/F answers 302 to
#                    $REC_URL/F, /same/F answers 302 to /F on itself,
#                    /port/F to https://localhost:REC_PORT/F (the same
#                    host, another port) (all only with the right credentials)
#         BEARER_URL https://localhost:P   only "Authorization: Bearer $BEARER_TOKEN";
#                    below /azure/ also only with "x-ms-version: 2021-08-06"
#         CERT_URL   https://localhost:P   only a client certificate of the
#                    test CA (ssl_verify_client on): $CA/client.{crt,key}
#         SAS_URL    https://localhost:P   only ?...&sig=$SAS_SIG (Azure SAS
#                    style); /redir/F?sig=... answers 302 to $REC_URL/F,
#                    /keep/F?Q to $REC_URL/F?Q (the query kept), /echo/F?Q
#                    to http://127.0.0.1:REC_PORT/F?Q (a hop winbuild refuses)
#         REC_URL    https://127.0.0.1:P   anyone: "another host" that a
#                    redirect leads to; records what it saw
#       Logs: $CREDS_LOGS/{basic,bearer,cert,sas,rec}.log, one line each:
#         "GET /a.bin?q HTTP/1.1" STATUS auth="<Authorization or ->" cert=<SUCCESS|NONE|...>
#   start_s3d DIR CA    tests/creds/s3d.py (SigV4, botocore's signer as the
#                       oracle): S3_URL, S3_LOG; keys in AWS_* of the test;
#                       with S3_SESSION_TOKEN set, temporary keys: it also
#                       wants that x-amz-security-token, signed
#   stop_servers        (servers.bash) stops them
_WB_CREDS_LIB="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

# make_client_cert CA: $CA/client.key, $CA/client.crt (clientAuth, test CA)
make_client_cert() {
	local d="$1"
	(
		set -e
		cd "$d"
		openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
			-keyout client.key -out client.csr -subj "/CN=winbuild builder" 2>/dev/null
		printf 'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=clientAuth\n' >ext-client.cnf
		openssl x509 -req -in client.csr -CA ca.crt -CAkey ca.key -CAcreateserial \
			-days 30 -extfile ext-client.cnf -out client.crt 2>/dev/null
		chmod 600 client.key
	)
}

start_creds_servers() {
	local www="$1" ca dir pb pt pc ps pr pid b64
	ca=$(cd "$2" && pwd)
	www=$(cd "$www" && pwd)
	dir=$(_wb_tmpdir nginx-creds) || return 1
	mkdir -p "$dir/tmp"
	export CREDS_LOGS="$dir"
	export BASIC_USER=builder BASIC_PASS="pw-$RANDOM$RANDOM-Basic"
	export BEARER_TOKEN="tok-$RANDOM$RANDOM-Bearer" SAS_SIG="sas$RANDOM$RANDOM"
	printf '%s:%s\n' "$BASIC_USER" "$(openssl passwd -apr1 "$BASIC_PASS")" >"$dir/htpasswd"
	b64=$(printf '%s:%s' "$BASIC_USER" "$BASIC_PASS" | base64 -w0)
	pb=$(free_port) pt=$(free_port) pc=$(free_port) ps=$(free_port) pr=$(free_port)
	export BASIC_URL="https://localhost:$pb" BEARER_URL="https://localhost:$pt"
	export CERT_URL="https://localhost:$pc" SAS_URL="https://localhost:$ps"
	export REC_URL="https://127.0.0.1:$pr"
	local tls="ssl_certificate $ca/server.crt; ssl_certificate_key $ca/server.key; root $www;"
	local body
	body=$(cat <<-EOF
			map \$http_authorization \$bearer_ok { "Bearer $BEARER_TOKEN" 1; default 0; }
			map \$http_authorization \$basic_ok { "Basic $b64" 1; default 0; }
			server {
				listen 127.0.0.1:$pb ssl; server_name localhost; $tls
				access_log $dir/basic.log wb;
				location /redir/ {
					if (\$basic_ok = 0) { return 401; }
					rewrite ^/redir/(.*)\$ $REC_URL/\$1 redirect;
				}
				location /same/ {
					if (\$basic_ok = 0) { return 401; }
					rewrite ^/same/(.*)\$ /\$1 redirect;
				}
				# the same host, another port (the recorder's)
				location /port/ {
					if (\$basic_ok = 0) { return 401; }
					rewrite ^/port/(.*)\$ https://localhost:$pr/\$1 redirect;
				}
				location / { auth_basic "winbuild test"; auth_basic_user_file $dir/htpasswd; }
			}
			server {
				listen 127.0.0.1:$pt ssl; server_name localhost; $tls
				access_log $dir/bearer.log wb;
				location / { if (\$bearer_ok = 0) { return 401; } }
				# Azure Blob with an Entra ID token also wants x-ms-version
				location /azure/ {
					alias $www/;
					if (\$bearer_ok = 0) { return 401; }
					if (\$http_x_ms_version != "2021-08-06") { return 400; }
				}
			}
			server {
				listen 127.0.0.1:$pc ssl; server_name localhost; $tls
				ssl_client_certificate $ca/ca.crt;
				ssl_verify_client on;
				access_log $dir/cert.log wb;
			}
			server {
				listen 127.0.0.1:$ps ssl; server_name localhost; $tls
				access_log $dir/sas.log wb;
				location /redir/ {
					if (\$arg_sig != "$SAS_SIG") { return 403; }
					rewrite ^/redir/(.*)\$ $REC_URL/\$1? redirect;
				}
				# a redirect that keeps the query string: to another
				# host (/keep/), to plain http, a hop winbuild refuses
				# and names (/echo/)
				location /keep/ {
					if (\$arg_sig != "$SAS_SIG") { return 403; }
					rewrite ^/keep/(.*)\$ $REC_URL/\$1 redirect;
				}
				location /echo/ {
					if (\$arg_sig != "$SAS_SIG") { return 403; }
					rewrite ^/echo/(.*)\$ http://127.0.0.1:$pr/\$1 redirect;
				}
				location / { if (\$arg_sig != "$SAS_SIG") { return 403; } }
			}
			server {
				listen 127.0.0.1:$pr ssl; server_name localhost; $tls
				access_log $dir/rec.log wb;
			}
	EOF
	)
	_wb_nginx_conf "$dir" '"$request" $status auth="$http_authorization" cert=$ssl_client_verify' "$body"
	for l in basic bearer cert sas rec; do : >"$dir/$l.log"; done
	_wb_nginx_launch "$dir"
	pid=$_WB_NGINX_LAUNCHED
	if ! _wb_wait_ours "$pid" "$dir/rec.log" "$dir/error.log" "$REC_URL" --cacert "$ca/ca.crt"; then
		echo "start_creds_servers: nginx did not start:" >&2
		cat "$dir/error.log" "$dir/stdout" >&2
		_wb_kill "$pid"
		return 1
	fi
	_WB_SERVER_PIDS+=("$pid")
	for l in basic bearer cert sas rec; do : >"$dir/$l.log"; done
}

start_s3d() {
	local www="$1" ca="$2" dir pid
	dir=$(_wb_tmpdir s3d) || return 1
	export AWS_ACCESS_KEY_ID="AKIDTEST$RANDOM" AWS_SECRET_ACCESS_KEY="s3cr3t-$RANDOM$RANDOM-Sigv4"
	export S3_REGION=eu-test-1 S3_LOG="$dir/access.log"
	: >"$S3_LOG"
	"$(_wb_python)" "$_WB_CREDS_LIB/s3d.py" --root "$www" --port-file "$dir/port" \
		--log "$S3_LOG" --cert "$ca/server.crt" --key "$ca/server.key" \
		--access-key "$AWS_ACCESS_KEY_ID" --secret-key "$AWS_SECRET_ACCESS_KEY" \
		--session-token "${S3_SESSION_TOKEN:-}" --region "$S3_REGION" --service s3 \
		--timeout "$WB_SERVER_TIMEOUT" </dev/null >"$dir/stdout" 2>"$dir/stderr" 3>&- &
	pid=$!
	_wb_wait_port_file start_s3d "$pid" "$dir" || return 1
	export S3_URL="https://localhost:$(cat "$dir/port")" S3D_PID="$pid"
}
