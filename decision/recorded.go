package decision

// Recorded is the decision a recorded call got (serve and proxy --record,
// docs/rollout.md): its outcome, step and deciding code, the deciding
// reason's message (redacted as every output is), the SHA-256 of the call
// as it was decided (its arguments unredacted) and the config revision
// the engine had when the call was recorded, and what the gateway did with
// the call. `mcpx-policy replay` compares a new decision with it, and
// counts the writes the recording says were dispatched for the write
// budgets that decide the calls after them.
type Recorded struct {
	Outcome  Outcome `json:"outcome"`
	Step     Step    `json:"step"`
	Code     Code    `json:"code,omitempty"`
	Message  string  `json:"message,omitempty"`
	SHA256   string  `json:"sha256,omitempty"`
	Revision string  `json:"revision,omitempty"`
	// Dispatched says whether the gateway let the call run: serve answered
	// it allowed to a caller that runs it, the proxy sent it on (an ask
	// once a person approved it). Nil in a recording made before gateways
	// said so.
	Dispatched *bool `json:"dispatched,omitempty"`
	// Approved says the call ran with a person's approval that the
	// recorded decision (serve's allow) already shows used: a replay has
	// no such approval to decide it with.
	Approved bool `json:"approved,omitempty"`
}
