// Package mcpxpolicy is the Go SDK of mcpx-policy: one policy gate for every
// MCP tool call an AI agent makes. For each call an Engine decides allow,
// ask (a person confirms the exact call) or deny, in the fixed order of
// SPEC §1.1, and says why.
//
// A daemon loads its config into an Engine once (New), calls Decide for
// every tool call from any number of goroutines, renders the decision for
// the surface that asked, tracks writes through the ledger's dispatch
// lifecycle (BeginWrite), and swaps in a new config atomically (Reload).
// An ask completes through an approval request (RequestApproval), a
// person's answer (Approvals) and a decision with the approval
// (DecideApproved).
//
// A deny is a value, not an error: Decide always returns a Decision, and
// whenever it also returns an error the Decision is a deny (fail closed).
// No OPA type appears in this API.
package mcpxpolicy
