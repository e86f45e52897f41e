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

// HTTPStatus is the HTTP status the daemon surface answers d with.
func HTTPStatus(d Decision) int { return render.StatusOf(d) }

// ConfirmationUnavailableDecision turns an ask into the deny a surface that cannot
// ask returns; it never turns an ask into an allow.
func ConfirmationUnavailableDecision(d Decision) Decision { return render.Unavailable(d) }

// ConfirmationDeclinedDecision turns an ask into the deny returned when the
// person said no.
func ConfirmationDeclinedDecision(d Decision) Decision { return render.Declined(d) }
