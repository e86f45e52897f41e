// Package redact makes what every output shows of a call and its
// decision: the one table of secret patterns (Secrets, which the policy
// reads as data.mcpx.secrets too) and the redactor that replaces secrets
// found by key name, by value shape and by the structure around them
// (structure.go), and cuts long values.
//
// It is a policy fact, not presentation: the renderings (internal/render),
// the decision log, the recorder and the SDK's Redact all take what this
// package makes. It imports only decision and
// internal/regexneed. Every function is pure and safe for concurrent use.
package redact

// Key is k as an output shows an argument key: replaced by a marker when
// it is secret-shaped, cut to MaxKeyChars.
func Key(k string) string { return newRedactor().key(k) }
