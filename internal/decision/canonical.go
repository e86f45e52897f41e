package decision

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/gowebpki/jcs"
)

// Canonical returns v in RFC 8785 (JCS) canonical JSON. Numbers may be
// json.Number, float64 or any Go integer; a value that is not JSON is an
// error.
func Canonical(v any) ([]byte, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("canonical json: %w", err)
	}
	out, err := jcs.Transform(raw)
	if err != nil {
		return nil, fmt.Errorf("canonical json: %w", err)
	}
	return out, nil
}

// CanonicalCall returns the canonical call {"server","tool","arguments"}
// whose hash identifies the exact call in the ledger, approvals and logs.
// Nil arguments are the empty object.
func CanonicalCall(server, tool string, args map[string]any) ([]byte, error) {
	if args == nil {
		args = map[string]any{}
	}
	return Canonical(map[string]any{"server": server, "tool": tool, "arguments": args})
}

// CallSHA256 is the hex SHA-256 of CanonicalCall.
func CallSHA256(server, tool string, args map[string]any) (string, error) {
	b, err := CanonicalCall(server, tool, args)
	if err != nil {
		return "", err
	}
	return SHA256Hex(b), nil
}

// ArgsSHA256 is the hex SHA-256 of the canonical arguments alone, as the
// ledger stores them.
func ArgsSHA256(args map[string]any) (string, error) {
	if args == nil {
		args = map[string]any{}
	}
	b, err := Canonical(args)
	if err != nil {
		return "", err
	}
	return SHA256Hex(b), nil
}

// SHA256Hex is the lowercase hex SHA-256 of b.
func SHA256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
