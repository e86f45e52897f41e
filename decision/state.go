package decision

import (
	"encoding/json"
	"time"
)

// The records of the state a decision reads and an ask waits in (the
// stores of the state dir, docs/ledger.md, docs/proxy.md#pinned-tool-definitions,
// docs/decisions/0008-approvals.md), as the SDK lists them.

// UnknownWrite is one unknown-outcome write: its ledger id, server, tool,
// the SHA-256 of its canonical arguments (never the arguments), when and on
// which surface it was sent, and Cause, why its outcome is unknown. While
// a server has one, its writes are denied (UnknownOutcomePending).
type UnknownWrite struct {
	LedgerEntry
	// Cause says why the outcome is unknown ("timeout", "transport
	// closed", "process 1234 exited while the call was in flight", ...).
	Cause string `json:"cause,omitempty"`
}

// Pin is one tool's pin: the trusted definition's SHA-256 (and of each of
// its fields) and annotation hints, when an operator last accepted one,
// and the changed definition waiting for acceptance, if any. It holds no
// description and no schema.
type Pin struct {
	Server string `json:"server"`
	Tool   string `json:"tool"`
	// Pinned is the trusted definition.
	Pinned PinnedDefinition `json:"pinned"`
	// Accepted is when an operator last accepted a definition; zero while
	// the pin is the one trusted on first use.
	Accepted time.Time `json:"accepted,omitzero"`
	// Pending is the differing definition last seen, waiting for an
	// operator to accept it; nil when the last one seen is the pinned
	// one. ChangedFields(Pinned.Fields, Pending.Fields) lists what
	// changed.
	Pending *PinnedDefinition `json:"pending,omitempty"`
}

// PinnedDefinition is what a Pin keeps of one definition of a tool.
type PinnedDefinition struct {
	// SHA256 is the hex SHA-256 of the canonical definition
	// (ToolSHA256).
	SHA256 string `json:"sha256"`
	// Fields maps each field of DefinitionFields the definition has to
	// the hex SHA-256 of its canonical value.
	Fields map[string]string `json:"fields"`
	// Annotations are the definition's hints (no title); nil when it has
	// no annotations.
	Annotations *Annotations `json:"annotations,omitempty"`
	// Seen is when this definition was first seen.
	Seen time.Time `json:"seen"`
}

// ApprovalState is where an approval request stands.
type ApprovalState string

// The states of an approval request. A used request is gone.
const (
	ApprovalPending  ApprovalState = "pending"
	ApprovalApproved ApprovalState = "approved"
	ApprovalDeclined ApprovalState = "declined"
)

// ApprovalRequest is an ask put on hold until a person answers it. Its
// JSON form is what serve's approval routes and `mcpx-policy approvals
// --format json` show.
type ApprovalRequest struct {
	// ID is 32 random hex digits; the answer and the use name it.
	ID string `json:"id"`
	// SHA256 is the sha256 of the unredacted canonical call
	// (CallSHA256); an approver gives it back to say which call they saw.
	SHA256 string `json:"sha256"`
	// Server and Tool name the call.
	Server string `json:"server"`
	Tool   string `json:"tool"`
	// Surface is where the ask was made: mcp, daemon or cli.
	Surface string `json:"surface,omitempty"`
	// State is where it stands; Created and Expires when it was made and
	// when it goes.
	State   ApprovalState `json:"state"`
	Created time.Time     `json:"created"`
	Expires time.Time     `json:"expires"`
	// Answered is when it was approved or declined (zero: not yet).
	Answered time.Time `json:"answered,omitzero"`
	// Prompt is what the approver is shown, redacted, as JSON: the exact
	// call (server, tool, canonical arguments, sha256, the JSON Pointers
	// of what was redacted), whether it writes and is destructive, and
	// the reasons to ask (docs/surfaces.md, "The ask prompt").
	Prompt json.RawMessage `json:"prompt,omitempty"`
	// Text is the prompt as a terminal shows it (and as an MCP
	// elicitation's message): the reasons, the exact call, what was
	// redacted, the sha256, and what approving means. It ends with a
	// newline.
	Text string `json:"-"`
}
