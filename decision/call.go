package decision

// Call is one tool call to judge. Tool carries what the server's own
// tools/list said about the tool; annotations are never taken from the
// caller's call body. Mode, when set (ask, allow or deny), may only tighten
// the write mode the config gives the server: the policy takes the
// stricter of the two (docs/check-order.md).
type Call struct {
	Surface   string         `json:"surface,omitempty"`
	Server    string         `json:"server"`
	Tool      Tool           `json:"tool"`
	Args      map[string]any `json:"args"`
	Mode      string         `json:"mode,omitempty"`
	Principal *Principal     `json:"principal,omitempty"`
	// Caller names who sent the call, as the program that took it knows
	// it — "<surface>:<who>", such as "daemon:127.0.0.1" (serve's HTTP
	// caller) or "mcp:<session>" (a proxy session) — and never as a call
	// document says: the approval requests of an ask are counted per
	// caller and principal, and per surface (the text before the first
	// ':'), so that one caller cannot fill the store
	// (docs/surfaces.md#fairness-one-caller-cannot-starve-another). "" counts the call under its Surface.
	// The policy does not read it, and it is no part of the call's JSON.
	Caller string `json:"-"`
	// Session names the agent session the call belongs to, for write
	// budgets kept per session (docs/configuration.md#budgets): a call
	// document's "session", or the SDK caller's own name for it. ""
	// counts the call under its Caller (the proxy's MCP session). The
	// policy does not read it; it is no part of the call's canonical form.
	Session string `json:"session,omitempty"`
}

// Tool is an MCP Tool as tools/list returns it: the fields the policy
// reads (name, annotations, inputSchema) and those a pinned definition
// covers besides (description, outputSchema; ToolSHA256).
type Tool struct {
	Name         string         `json:"name"`
	Description  string         `json:"description,omitempty"`
	Annotations  *Annotations   `json:"annotations,omitempty"`
	InputSchema  map[string]any `json:"inputSchema,omitempty"`
	OutputSchema map[string]any `json:"outputSchema,omitempty"`
}

// Annotations are the MCP tool hints. A nil hint takes the MCP default:
// readOnlyHint false, destructiveHint true.
type Annotations struct {
	Title           string `json:"title,omitempty"`
	ReadOnlyHint    *bool  `json:"readOnlyHint,omitempty"`
	DestructiveHint *bool  `json:"destructiveHint,omitempty"`
	IdempotentHint  *bool  `json:"idempotentHint,omitempty"`
	OpenWorldHint   *bool  `json:"openWorldHint,omitempty"`
}

// Principal is who the call is made for; only operator overrides read it.
type Principal struct {
	ID     string   `json:"id"`
	Groups []string `json:"groups,omitempty"`
}

// LedgerEntry is one unknown-outcome write as the policy sees it. It holds
// the SHA-256 of the canonical arguments, never the arguments.
type LedgerEntry struct {
	ID         string `json:"id"`
	Server     string `json:"server"`
	Tool       string `json:"tool"`
	ArgsSHA256 string `json:"args_sha256"`
	Time       string `json:"time"`
	Surface    string `json:"surface"`
}
