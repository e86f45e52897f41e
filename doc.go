// Package mcpxpolicy is the Go SDK of mcpx-policy: one policy gate for every
// MCP tool call an AI agent makes. For each call an Engine decides allow,
// ask (a person confirms the exact call) or deny, in a fixed order of steps
// (docs/check-order.md), and says why. The CLI, the HTTP service and the
// MCP proxy of this repository are built on this package alone (and on its
// public packages decision, mcpgate and opabundle): it is the one door to
// the policy (docs/decisions/0013-a-thin-door.md).
//
// Deciding. New loads the config (Options: files, environment, flags,
// state dir) into an Engine once; Decide judges a decision.Call from any
// number of goroutines; Reload swaps a new config in atomically. Answer is
// the whole of what an adapter that reads bytes does with a call document
// (the call file of `mcpx-policy eval`, the body of serve's /v1/decide):
// read it strictly, decide it, put an ask on hold, and render the
// decision, redacted once, for the call's surface. Check validates a
// config without opening any state.
//
// Showing. Redact makes a decision fit to show (a Redacted, what every
// output takes); Render shows it for a surface (SurfaceDaemon, SurfaceMCP,
// SurfaceCLI). Package mcpgate has what an MCP gateway answers and adds
// besides.
//
// Asking. An ask completes through an approval request (RequestApproval),
// a person's answer (Approvals: Approve, Decline) and a decision with the
// approval (DecideApproved).
//
// State. The Engine keeps the state it decides with behind three handles
// of one shape — open, list, change: Writes (the unknown-outcome ledger:
// Begin a write, Recover, List, Clear), Approvals (List, Approve, Decline)
// and Pins (List, Accept). OpenWrites, OpenApprovals and OpenPins open
// each without a policy, as the CLI does. Commands spells the commands
// an operator runs against them.
//
// Rolling out. DiffConfigs compares two configs, a Recorder records live
// calls for `mcpx-policy replay`, and BundleFiles gives the policy as the
// files of an OPA bundle, which package opabundle writes and signs; a
// gateway that asks stock OPA servers sends OPAInput and reads the answer
// with ParseDecision.
//
// A deny is a value, not an error: Decide always returns a decision, and
// whenever it also returns an error the decision is a deny (fail closed).
// The values — calls, decisions, reasons, codes, the stores' records — are
// in package decision. No OPA type appears in this API.
package mcpxpolicy
