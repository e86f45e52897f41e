package decision

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/gowebpki/jcs"
)

// Canonical returns v in RFC 8785 (JCS) canonical JSON. Numbers may be
// json.Number, float64 or any Go integer; a value that is not JSON is an
// error.
func Canonical(v any) ([]byte, error) {
	// decoded JSON (maps, slices, strings, numbers) is written directly;
	// anything else, and any value the direct writer is unsure of, takes
	// the reference path: Go's encoder, then jcs.Transform
	if out, ok := appendCanonical(make([]byte, 0, 1024), v); ok {
		return out, nil
	}
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

// appendCanonical appends v's RFC 8785 form to b, exactly as Go's encoder
// followed by jcs.Transform would write it: object members sorted by their
// UTF-16 code units, numbers in ECMAScript form (jcs.NumberToJSON of the
// value as float64), strings as UTF-8 with invalid bytes replaced by U+FFFD
// one for one (as Go's encoder does) and only '"', '\\' and control
// characters escaped. It reports false for a value it does not handle
// (other Go types, NaN, infinities, malformed json.Number text, numbers out
// of float64 range), leaving the caller to take the reference path, which
// decides or fails the same way it always did.
func appendCanonical(b []byte, v any) ([]byte, bool) {
	switch x := v.(type) {
	case nil:
		return append(b, "null"...), true
	case bool:
		return strconv.AppendBool(b, x), true
	case string:
		return appendCanonicalString(b, x), true
	case float64:
		return appendCanonicalFloat(b, x)
	case int:
		return appendCanonicalFloat(b, float64(x))
	case int64:
		return appendCanonicalFloat(b, float64(x))
	case json.Number:
		if !json.Valid([]byte(x)) || len(x) == 0 || (x[0] != '-' && (x[0] < '0' || x[0] > '9')) {
			return b, false
		}
		f, err := strconv.ParseFloat(string(x), 64)
		if err != nil {
			return b, false
		}
		return appendCanonicalFloat(b, f)
	case []any:
		b = append(b, '[')
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			var ok bool
			if b, ok = appendCanonical(b, e); !ok {
				return b, false
			}
		}
		return append(b, ']'), true
	case map[string]any:
		type member struct {
			key  string
			sort []uint16
		}
		ms := make([]member, 0, len(x))
		for k := range x {
			if !utf8.ValidString(k) { // two keys could become one
				return b, false
			}
			ms = append(ms, member{k, utf16.Encode([]rune(k))})
		}
		slices.SortFunc(ms, func(a, b member) int { return slices.Compare(a.sort, b.sort) })
		b = append(b, '{')
		for i, m := range ms {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendCanonicalString(b, m.key)
			b = append(b, ':')
			var ok bool
			if b, ok = appendCanonical(b, x[m.key]); !ok {
				return b, false
			}
		}
		return append(b, '}'), true
	}
	return b, false
}

func appendCanonicalFloat(b []byte, f float64) ([]byte, bool) {
	s, err := jcs.NumberToJSON(f)
	if err != nil {
		return b, false
	}
	return append(b, s...), true
}

// validUTF8 is s with each invalid byte replaced by U+FFFD, as Go's JSON
// encoder writes it.
func validUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	out := make([]rune, 0, len(s))
	for _, r := range s {
		out = append(out, r) // range yields U+FFFD for each invalid byte
	}
	return string(out)
}

func appendCanonicalString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for _, c := range []byte(validUTF8(s)) {
		switch c {
		case '\\', '"':
			b = append(b, '\\', c)
		case '\b':
			b = append(b, '\\', 'b')
		case '\f':
			b = append(b, '\\', 'f')
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		default:
			if c < 0x20 {
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			} else {
				b = append(b, c)
			}
		}
	}
	return append(b, '"')
}
