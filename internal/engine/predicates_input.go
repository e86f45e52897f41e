package engine

import (
	"encoding/json"
	"strconv"

	"github.com/open-policy-agent/opa/v1/ast"
)

// wellFormed is the Go form of predicates.well_formed: the input has the
// shape the engine builds, field by field (lib.req's well_shaped), and every
// number of the arguments is written in at most 15 characters of digits,
// a sign and a point, which lib.req accepts without further checks. It is
// stricter than req: a ledger total written other than as plain digits,
// a number in another form, any value that is not JSON is a no.
func wellFormed(ga *callArgs, v ast.Value) bool {
	in, ok := v.(ast.Object)
	if !ok {
		return false
	}
	if s, ok := field(in, kServer).(ast.String); !ok || s == "" {
		return false
	}
	tool, ok := field(in, kTool).(ast.Object)
	if !ok {
		return false
	}
	if s, ok := field(tool, kName).(ast.String); !ok || s == "" {
		return false
	}
	switch ann := field(tool, kAnnotations).(type) {
	case nil:
	case ast.Object:
		for _, k := range []*ast.Term{kReadOnly, kDestructive} {
			switch field(ann, k).(type) {
			case nil, ast.Boolean:
			default:
				return false
			}
		}
	default:
		return false
	}
	switch field(tool, kInputSchema).(type) {
	case nil, ast.Null, ast.Object:
	default:
		return false
	}
	if m := field(in, kMode); m != nil {
		if s, ok := m.(ast.String); !ok || (s != "ask" && s != "allow" && s != "deny") {
			return false
		}
	}
	switch led := field(in, kLedger).(type) {
	case nil:
	case ast.Object:
		switch es := field(led, kEntries).(type) {
		case nil:
		case *ast.Array:
			for i := 0; i < es.Len(); i++ {
				if _, ok := es.Elem(i).Value.(ast.Object); !ok {
					return false
				}
			}
		default:
			return false
		}
		if t := field(led, kTotal); t != nil {
			if n, ok := t.(ast.Number); !ok || !digits(string(n)) {
				return false
			}
		}
	default:
		return false
	}
	if p := field(in, kPrincipal); p != nil {
		if _, ok := p.(ast.Object); !ok {
			return false
		}
	}
	if s := field(in, kSurface); s != nil {
		if _, ok := s.(ast.String); !ok {
			return false
		}
	}
	if s := field(in, kCallSHA256); s != nil {
		if h, ok := s.(ast.String); !ok || !lowerHex64(string(h)) {
			return false
		}
	}
	if in.Get(kArgs) == nil && ga.isLite() {
		return plainGo(ga.goArgs, 0)
	}
	args, ok := field(in, kArgs).(ast.Object)
	return ok && plainJSON(args, 0)
}

// plainGo is plainJSON for the caller's decoded arguments: only the Go
// types the engine converts to JSON values (map[string]any, []any,
// string, bool, nil, json.Number, float64, int, int64), numbers checked on
// the text their AST would have. Any other type is a no.
func plainGo(v any, depth int) bool {
	if depth > maxDepth {
		return false
	}
	var buf [32]byte
	switch x := v.(type) {
	case nil, bool, string:
		return true
	case json.Number:
		return shortDecimal(string(x))
	case float64:
		return shortDecimal(string(strconv.AppendFloat(buf[:0], x, 'g', -1, 64)))
	case int:
		return shortDecimal(string(strconv.AppendInt(buf[:0], int64(x), 10)))
	case int64:
		return shortDecimal(string(strconv.AppendInt(buf[:0], x, 10)))
	case []any:
		for _, e := range x {
			if !plainGo(e, depth+1) {
				return false
			}
		}
		return true
	case map[string]any:
		for _, e := range x {
			if !plainGo(e, depth+1) {
				return false
			}
		}
		return true
	}
	return false
}

// maxDepth bounds the nesting the Go predicates walk; deeper values are
// left to Rego.
const maxDepth = 1000

// plainJSON reports whether v holds only JSON values (no sets, no string
// keys missing) whose numbers are all short plain decimals.
func plainJSON(v ast.Value, depth int) bool {
	if depth > maxDepth {
		return false
	}
	switch x := v.(type) {
	case ast.Null, ast.Boolean, ast.String:
		return true
	case ast.Number:
		return shortDecimal(string(x))
	case *ast.Array:
		for i := 0; i < x.Len(); i++ {
			if !plainJSON(x.Elem(i).Value, depth+1) {
				return false
			}
		}
		return true
	case ast.Object:
		ok := true
		x.Until(func(k, e *ast.Term) bool {
			_, isString := k.Value.(ast.String)
			ok = isString && plainJSON(e.Value, depth+1)
			return !ok
		})
		return ok
	}
	return false
}

// shortDecimal reports whether s is a JSON number of at most 15 characters
// with no exponent (lib.req: `^[-0-9.]{1,15}$` on its text): any such
// decimal is the shortest text of the double it reads as.
func shortDecimal(s string) bool {
	if len(s) == 0 || len(s) > 15 {
		return false
	}
	i := 0
	if s[0] == '-' {
		i++
	}
	start := i
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	if i == start || (s[start] == '0' && i-start > 1) {
		return false
	}
	if i == len(s) {
		return true
	}
	if s[i] != '.' {
		return false
	}
	i++
	return i < len(s) && digits(s[i:])
}

// digits reports whether s is one or more ASCII digits.
func digits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func lowerHex64(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// field is o[k]'s value, nil when absent.
func field(o ast.Object, k *ast.Term) ast.Value {
	if t := o.Get(k); t != nil {
		return t.Value
	}
	return nil
}
