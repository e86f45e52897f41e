#!/bin/sh
# Prints, for each reason code the policy decides, the decision the CLI gives
# on each surface: the examples quoted in docs/reasons/ and docs/check-order.md.
#   examples/calls-reasons/reasons.sh [MCPX_POLICY_BINARY]   (from the repository root)
# The binary defaults to the installed mcpx-policy (go install ./cmd/mcpx-policy):
# under go run every non-zero exit status would read 1.
# ConfirmationUnavailable shows on the daemon surface for any ask;
# ConfirmationDeclined needs a person, so its pages quote internal/render's
# golden files instead.
set -u
bin=${1:-mcpx-policy}
ex=examples
cr=$ex/calls-reasons
tmp=${TMPDIR:-/tmp}
mkdir -p "$tmp/mcpx-demo-empty" "$tmp/mcpx-demo-pending" "$tmp/mcpx-demo-corrupt" "$tmp/mcpx-demo-pins"
cp $cr/pins-changed.json "$tmp/mcpx-demo-pins/pins.json"
cp $cr/ledger-pending.json "$tmp/mcpx-demo-pending/ledger.json"
cp $cr/ledger-corrupt.json "$tmp/mcpx-demo-corrupt/ledger.json"

# code | extra config layer ("-" for none) | state dir | call file
while IFS='|' read -r code layer state call; do
	extra=""
	[ "$layer" = "-" ] || extra="--config $layer"
	for surface in cli daemon mcp; do
		echo "== $code ($surface)"
		# shellcheck disable=SC2086
		$bin eval --config $ex/mcpx-policy.yaml $extra --state-dir "$tmp/$state" \
			--format json --surface $surface "$call"
		echo "exit status $?"
	done
done <<TABLE
ToolDefinitionChanged|$cr/pin-tools.yaml|mcpx-demo-pins|$ex/calls/2-write-asks.json
HiddenTool|-|mcpx-demo-empty|$ex/calls/4-hidden-tool.json
UnknownOutcomePending|-|mcpx-demo-pending|$ex/calls/2-write-asks.json
LedgerUnreadable|-|mcpx-demo-corrupt|$ex/calls/2-write-asks.json
UnknownArguments|-|mcpx-demo-empty|$cr/read-typo.json
IgnoredArguments|$cr/unknown-args-warn.yaml|mcpx-demo-empty|$cr/read-typo.json
ArgumentRuleViolation|-|mcpx-demo-empty|$ex/calls/3-write-outside-workspace.json
WriteDenied|$cr/write-deny.yaml|mcpx-demo-empty|$ex/calls/2-write-asks.json
WriteNeedsConfirmation|-|mcpx-demo-empty|$ex/calls/2-write-asks.json
DestructiveNeedsConfirmation|$cr/destructive-floor.yaml|mcpx-demo-empty|$ex/calls/2-write-asks.json
OverrideDeny|$cr/overrides.yaml|mcpx-demo-empty|$cr/write-env-file.json
OverrideAsk|$cr/overrides.yaml|mcpx-demo-empty|$cr/write-ci-config.json
InvalidInput|-|mcpx-demo-empty|$cr/invalid-mode.json
PolicyError|$cr/policy-error.yaml|mcpx-demo-empty|$ex/calls/2-write-asks.json
TABLE
