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
