package mcpxpolicy

import (
	"github.com/mcpx/mcpx-policy/internal/render"
)

// The surfaces a decision renders for.
const (
	SurfaceDaemon = render.SurfaceDaemon
	SurfaceMCP    = render.SurfaceMCP
	SurfaceCLI    = render.SurfaceCLI
)

// Render returns how surface shows call's decision d: for the daemon an
// HTTP status and JSON body, for MCP the CallToolResult (or, for a hidden
// tool, the unknown-tool JSON-RPC error; for an ask, the elicitation
// request), for the CLI the text. Values echoed from the arguments are
// redacted when secret-shaped and cut when long.
func Render(surface string, call Call, d Decision) (any, error) {
	return render.Render(surface, call, d)
}

// Redact returns d as every output shows it: secret-shaped keys in
// violation paths, secret values (by key name and by shape, anywhere in a
// string), and every secret of call's arguments echoed in a message
// (an override quoting args.password, say) replaced by a marker; long
// values cut after that. Render does it itself; a program that prints,
// logs or returns a decision any other way calls Redact first. Decide's
// decision is the policy's own document, what a stock OPA answers; only
// the in-process SDK sees it before Redact. Redacting twice changes
// nothing; d is not modified. See docs/surfaces.md.
func Redact(call Call, d Decision) Decision { return render.Redact(d, call.Args) }

// HTTPStatus is the HTTP status the daemon surface answers d with.
func HTTPStatus(d Decision) int { return render.StatusOf(d) }

// ConfirmationUnavailableDecision turns an ask into the deny a surface that cannot
// ask returns; it never turns an ask into an allow.
func ConfirmationUnavailableDecision(d Decision) Decision { return render.Unavailable(d) }

// ConfirmationDeclinedDecision turns an ask into the deny returned when the
// person said no.
func ConfirmationDeclinedDecision(d Decision) Decision { return render.Declined(d) }
