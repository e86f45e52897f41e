// Package mcpxpolicy is the Go SDK of mcpx-policy: one policy gate for every
// MCP tool call an AI agent makes. For each call an Engine decides allow,
// ask (a person confirms the exact call) or deny, in a fixed order of steps
// (docs/check-order.md), and says why. The CLI, the HTTP service and the
// MCP proxy of this repository are built on this package alone.
//
// Deciding. New loads the config (Options: files, environment, flags,
// state dir) into an Engine once; Decide judges a Call from any number of
// goroutines; Reload swaps a new config in atomically. Check validates a
// config without opening any state. DecodeCall reads a call document (the
// call file of `mcpx-policy eval`, the body of serve's /v1/decide).
//
// Showing. Render shows a Decision for a surface (SurfaceDaemon,
// SurfaceMCP, SurfaceCLI) as a Rendering; Respond is the whole JSON answer
// of `eval --format json` and /v1/decide; Redact is what every output
// shows of a decision. An MCP proxy answers with RenderMCP, UnknownTool and
// UnknownOutcomeResult and annotates a server's results with AddRider and
// AddShadow.
//
// Asking. An ask completes through an approval request (RequestApproval),
// a person's answer (Approvals: Approve, Decline) and a decision with the
// approval (DecideApproved).
//
// State. Writes go through the unknown-outcome ledger's dispatch lifecycle
// (BeginWrite); a lost answer blocks the server's writes until an operator
// clears it (ClearWrites, or OpenWrites without an Engine). Pinned tool
// definitions are listed and accepted through Pins (OpenPins).
//
// Rolling out. DiffConfigs compares two configs, a Recorder records live
// calls for `mcpx-policy replay`, and BundleFiles gives the policy as the
// files of an OPA bundle, which package opabundle writes and signs.
//
// A deny is a value, not an error: Decide always returns a Decision, and
// whenever it also returns an error the Decision is a deny (fail closed).
// No OPA type appears in this API.
package mcpxpolicy
