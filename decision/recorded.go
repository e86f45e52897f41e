package decision

// Recorded is the decision a recorded call got (serve and proxy --record,
// docs/rollout.md): its outcome, step and deciding code, the deciding
// reason's message (redacted as every output is), the SHA-256 of the call
// as it was decided (its arguments unredacted) and the config revision
// the engine had when the call was recorded. `mcpx-policy replay` compares
// a new decision with it.
type Recorded struct {
	Outcome  Outcome `json:"outcome"`
	Step     Step    `json:"step"`
	Code     Code    `json:"code,omitempty"`
	Message  string  `json:"message,omitempty"`
	SHA256   string  `json:"sha256,omitempty"`
	Revision string  `json:"revision,omitempty"`
}
