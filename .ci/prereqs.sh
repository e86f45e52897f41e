#!/usr/bin/env bash
# Checks, before `make test` starts, that everything the tests need beyond
# this repository is installed, and for each thing missing prints the
# command that installs it (README.md#prerequisites). Exit 1 when one is
# missing, so that `make test` fails at once instead of deep inside a
# package's output.
set -uo pipefail
cd "$(dirname "$0")/.."

missing=0
need() { # need WHAT WHY HINT
	echo "mcpx-policy: error: $1 is not installed: $2" >&2
	echo "mcpx-policy: hint: $3" >&2
	missing=1
}

# Go: go.mod names the version; a newer toolchain is fetched by go itself.
if ! command -v go >/dev/null 2>&1; then
	need "Go" "it builds and tests everything" "install Go $(sed -n 's/^go //p' go.mod) or later from https://go.dev/dl/"
fi
# npm: the MCP servers of the end-to-end tests (e2e/package.json).
if [ ! -d e2e/node_modules ] && ! command -v npm >/dev/null 2>&1; then
	need "npm" "it installs the MCP servers the end-to-end tests run (npm ci --prefix e2e)" "apt-get install nodejs npm"
fi
# PostgreSQL: the server binaries for a throwaway cluster, unless the
# tests are given a database (MCPX_POLICY_TEST_PG_DSN).
if [ -z "${MCPX_POLICY_TEST_PG_DSN:-}" ] && ! .ci/postgres.sh check 2>/dev/null; then
	need "PostgreSQL" "the ledger tests start a throwaway server (initdb and pg_ctl; .ci/postgres.sh)" \
		"apt-get install postgresql (or set MCPX_POLICY_TEST_PG_DSN to a database of your own)"
fi
# The OpenMetrics parser of the Prometheus Python client: /metrics must
# parse with a real parser (internal/metrics, TestOpenMetricsParses).
py=""
for p in ${MCPX_POLICY_TEST_PYTHON:-} python3 /usr/bin/python3; do
	if command -v "$p" >/dev/null 2>&1 && "$p" -c 'import prometheus_client.openmetrics.parser' >/dev/null 2>&1; then
		py=$p
		break
	fi
done
if [ -z "$py" ]; then
	need "the Prometheus Python client" "/metrics is checked with its OpenMetrics parser" "apt-get install python3-prometheus-client"
fi
# Programs the commands of README.md and docs/ run (TestDocs runs them).
for prog in curl jq openssl git; do
	if ! command -v "$prog" >/dev/null 2>&1; then
		need "$prog" "the commands the docs show run it (policy_test's TestDocs)" "apt-get install $prog"
	fi
done
exit $missing
