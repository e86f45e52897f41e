#!/usr/bin/env bash
# Runs a command with a throwaway PostgreSQL cluster for the ledger tests:
#
#   .ci/postgres.sh run -- CMD ARGS…
#   .ci/postgres.sh check      # exit 0 when the server binaries are found
#
# It initializes a cluster in a temp dir, starts it on a Unix socket in
# that dir (no TCP port, so runs never collide), creates the database
# mcpx, exports MCPX_POLICY_TEST_PG_DSN for CMD, and removes everything
# when CMD ends, passing on CMD's exit status. As root it runs the server
# as the postgres user (Debian's postgresql package creates it). When
# MCPX_POLICY_TEST_PG_DSN is already set (a database of your own, "skip",
# or an outer .ci/postgres.sh), it runs CMD with it and starts nothing.
#
# The cluster runs with fsync off: the tests kill clients, never the
# server, and the ledger's guarantees against a client's death do not
# depend on it (docs/ledger.md). Needs initdb and pg_ctl: on Debian,
# apt-get install postgresql.
set -euo pipefail

mode=${1:-}
case "$mode" in
run)
	if [ "${2:-}" != -- ] || [ $# -lt 3 ]; then
		echo "usage: .ci/postgres.sh run -- CMD ARGS…" >&2
		exit 2
	fi
	shift 2
	;;
check) ;;
*)
	echo "usage: .ci/postgres.sh run -- CMD ARGS… | .ci/postgres.sh check" >&2
	exit 2
	;;
esac

if [ "$mode" = run ] && [ -n "${MCPX_POLICY_TEST_PG_DSN:-}" ]; then
	echo "== PostgreSQL for the ledger tests: MCPX_POLICY_TEST_PG_DSN=$MCPX_POLICY_TEST_PG_DSN"
	exec "$@"
fi

bindir=""
if command -v initdb >/dev/null 2>&1 && command -v pg_ctl >/dev/null 2>&1; then
	bindir=$(dirname "$(readlink -f "$(command -v initdb)")")
else
	for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
		if [ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ]; then bindir=$d; break; fi
	done
fi
if [ -z "$bindir" ]; then
	echo "mcpx-policy: error: PostgreSQL is not installed: the ledger tests need a PostgreSQL server (initdb and pg_ctl, found neither on PATH nor in /usr/lib/postgresql/*/bin)" >&2
	echo "mcpx-policy: hint: apt-get install postgresql (or set MCPX_POLICY_TEST_PG_DSN to a database of your own)" >&2
	exit 1
fi
if [ "$mode" = check ]; then
	exit 0
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/mcpx-pg.XXXXXX")
as=()
if [ "$(id -u)" = 0 ]; then
	if ! id postgres >/dev/null 2>&1; then
		echo "mcpx-policy: error: running as root and there is no postgres user to run the server as" >&2
		exit 1
	fi
	chown postgres: "$tmp"
	as=(runuser -u postgres --)
fi
chmod 700 "$tmp"

stop() {
	"${as[@]}" "$bindir/pg_ctl" -D "$tmp/data" -m immediate stop >/dev/null 2>&1 || true
	rm -rf "$tmp"
}
trap stop EXIT

"${as[@]}" "$bindir/initdb" -D "$tmp/data" -U postgres -A trust --no-sync -E UTF8 >"$tmp/initdb.log" 2>&1 ||
	{ cat "$tmp/initdb.log" >&2; exit 1; }
"${as[@]}" "$bindir/pg_ctl" -D "$tmp/data" -l "$tmp/server.log" -w -t 60 \
	-o "-c listen_addresses='' -c unix_socket_directories='$tmp' -c fsync=off -c full_page_writes=off -c max_connections=300" start >/dev/null ||
	{ cat "$tmp/server.log" >&2; exit 1; }
"$bindir/psql" -h "$tmp" -U postgres -d postgres -v ON_ERROR_STOP=1 -qc "CREATE DATABASE mcpx" >/dev/null

export MCPX_POLICY_TEST_PG_DSN="host=$tmp user=postgres dbname=mcpx"
echo "== PostgreSQL $("$bindir/postgres" --version | awk '{print $3}') for the ledger tests: $MCPX_POLICY_TEST_PG_DSN"
set +e
"$@"
status=$?
set -e
exit $status
