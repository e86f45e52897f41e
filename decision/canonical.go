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

// AppendCallDigest appends CanonicalCall(server, tool, args) to canon and,
// in the same walk of the arguments, what the canonical form does not keep
// of them to exact: each number's Go type and text as written, each
// string's bytes when they are not valid UTF-8. Equal canonical and exact
// bytes mean equal arguments as decoded JSON (the embedded engine keys
// its decision cache on both, and hashes the call with the first). ok is
// false when the arguments are not decoded JSON the direct writer takes
// (then use CanonicalCall, which takes the reference path or fails).
func AppendCallDigest(canon, exact []byte, server, tool string, args map[string]any) (canonOut, exactOut []byte, ok bool) {
	if args == nil {
		args = map[string]any{}
	}
	canon = append(canon, `{"arguments":`...)
	if canon, ok = walkCanonical(canon, args, &exact); !ok {
		return canon, exact, false
	}
	canon = append(canon, `,"server":`...)
	canon = appendCanonicalString(canon, server)
	canon = append(canon, `,"tool":`...)
	canon = appendCanonicalString(canon, tool)
	return append(canon, '}'), exact, true
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
func appendCanonical(b []byte, v any) ([]byte, bool) { return walkCanonical(b, v, nil) }

// walkCanonical is appendCanonical; when ex is not nil it also appends to
// *ex, in the order the values are written, what the canonical form loses
// (AppendCallDigest).
func walkCanonical(b []byte, v any, ex *[]byte) ([]byte, bool) {
	switch x := v.(type) {
	case nil:
		return append(b, "null"...), true
	case bool:
		return strconv.AppendBool(b, x), true
	case string:
		if ex != nil && !utf8.ValidString(x) {
			*ex = appendExact(*ex, 's', x)
		}
		return appendCanonicalString(b, x), true
	case float64:
		if ex != nil {
			*ex = strconv.AppendFloat(append(*ex, 'F'), x, 'g', -1, 64)
		}
		return appendCanonicalFloat(b, x)
	case int:
		if ex != nil {
			*ex = strconv.AppendInt(append(*ex, 'I'), int64(x), 10)
		}
		return appendCanonicalFloat(b, float64(x))
	case int64:
		if ex != nil {
			*ex = strconv.AppendInt(append(*ex, 'I'), x, 10)
		}
		return appendCanonicalFloat(b, float64(x))
	case json.Number:
		if !validNumber(string(x)) {
			return b, false
		}
		f, err := strconv.ParseFloat(string(x), 64)
		if err != nil {
			return b, false
		}
		if ex != nil {
			*ex = appendExact(*ex, 'N', string(x))
		}
		return appendCanonicalFloat(b, f)
	case []any:
		b = append(b, '[')
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			var ok bool
			if b, ok = walkCanonical(b, e, ex); !ok {
				return b, false
			}
		}
		return append(b, ']'), true
	case map[string]any:
		var buf [16]string
		keys := buf[:0]
		for k := range x {
			if !utf8.ValidString(k) { // two keys could become one
				return b, false
			}
			keys = append(keys, k)
		}
		slices.SortFunc(keys, compareUTF16)
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendCanonicalString(b, k)
			b = append(b, ':')
			var ok bool
			if b, ok = walkCanonical(b, x[k], ex); !ok {
				return b, false
			}
		}
		return append(b, '}'), true
	}
	return b, false
}

// appendExact appends a tagged, length-prefixed text to ex.
func appendExact(ex []byte, tag byte, s string) []byte {
	ex = strconv.AppendInt(append(ex, tag), int64(len(s)), 10)
	return append(append(ex, ':'), s...)
}

// validNumber reports whether s is a JSON number (RFC 8259 grammar).
func validNumber(s string) bool {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && s[i] >= '1' && s[i] <= '9':
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
	default:
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		if i == len(s) || s[i] < '0' || s[i] > '9' {
			return false
		}
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if i == len(s) || s[i] < '0' || s[i] > '9' {
			return false
		}
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
	}
	return i == len(s)
}

// compareUTF16 orders valid UTF-8 strings by their UTF-16 code units, as
// RFC 8785 sorts object members, without encoding them.
func compareUTF16(a, b string) int {
	for a != "" && b != "" {
		ra, na := utf8.DecodeRuneInString(a)
		rb, nb := utf8.DecodeRuneInString(b)
		a, b = a[na:], b[nb:]
		if ra == rb {
			continue
		}
		a1, a2 := utf16Units(ra)
		b1, b2 := utf16Units(rb)
		if a1 != b1 {
			return int(a1) - int(b1)
		}
		return int(a2) - int(b2)
	}
	return len(a) - len(b)
}

// utf16Units is r's UTF-16 encoding: one unit (and 0) or a surrogate pair.
func utf16Units(r rune) (uint16, uint16) {
	if r < 0x10000 {
		return uint16(r), 0
	}
	r1, r2 := utf16.EncodeRune(r)
	return uint16(r1), uint16(r2)
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
	s = validUTF8(s)
	b = append(b, '"')
	start := 0 // the bytes since start need no escape: copied in one run
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '\\' && c != '"' {
			continue
		}
		b = append(b, s[start:i]...)
		start = i + 1
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
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		}
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
