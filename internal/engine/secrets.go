package engine

import (
	"encoding/json"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/mcpx/mcpx-policy/internal/regexneed"
)

// secretTable is the Go reading of the secret table the policy redacts
// with (data.mcpx.secrets, rego/mcpx/lib/text.rego), for the predicates
// plain_text and plain_value: it answers exactly what text.rego's
// _suspect and secret_key answer, so that a value the predicates call
// plain is one the policy would echo unchanged. A table the policy would
// read differently (a field missing or of another type, a regex that does
// not compile) makes every answer "not plain": the Rego path decides.
type secretTable struct {
	ok      bool
	maxScan int
	exact   map[string]bool
	counts  map[string]bool
	parts   []string
	alts    []alternative // the shapes' regexes and the entropy run: text._any
}

// alternative is one alternative of text._any with what every match of
// it contains (need), so that most strings skip it without running it.
type alternative struct {
	re   *regexp.Regexp
	need regexneed.Need
}

func newSecretTable(data any) *secretTable {
	raw, err := json.Marshal(data)
	if err != nil {
		return &secretTable{}
	}
	var t struct {
		KeyParts  *[]string `json:"keyParts"`
		KeyExact  *[]string `json:"keyExact"`
		KeyCounts *[]string `json:"keyCounts"`
		Shapes    *[]struct {
			RE *string `json:"re"`
		} `json:"shapes"`
		Entropy *struct {
			Run *string `json:"run"`
		} `json:"entropy"`
		MaxScan *json.Number `json:"maxScan"`
	}
	if json.Unmarshal(raw, &t) != nil || t.KeyParts == nil || t.KeyExact == nil || t.KeyCounts == nil ||
		t.Shapes == nil || t.Entropy == nil || t.Entropy.Run == nil || t.MaxScan == nil {
		return &secretTable{}
	}
	maxScan, err := t.MaxScan.Int64()
	if err != nil || maxScan < 0 {
		return &secretTable{}
	}
	st := &secretTable{ok: true, maxScan: int(maxScan), exact: set(*t.KeyExact), counts: set(*t.KeyCounts), parts: *t.KeyParts}
	res := make([]string, 0, len(*t.Shapes)+1)
	for _, sh := range *t.Shapes {
		if sh.RE == nil {
			return &secretTable{}
		}
		res = append(res, *sh.RE)
	}
	for _, src := range append(res, *t.Entropy.Run) {
		// regexp.Compile is what OPA's regex.match compiles with; each
		// alternative of (?:a)|(?:b)|… matches where the whole does
		re, err := regexp.Compile(src)
		if err != nil {
			return &secretTable{}
		}
		need, err := regexneed.Of(src)
		if err != nil {
			return &secretTable{}
		}
		st.alts = append(st.alts, alternative{re: re, need: need})
	}
	return st
}

func set(xs []string) map[string]bool {
	m := make(map[string]bool, len(xs))
	for _, x := range xs {
		m[x] = true
	}
	return m
}

// suspect is text._suspect(s): the table is missing, s is longer than
// maxScan characters, or some shape or the entropy run matches in s.
func (t *secretTable) suspect(s string) bool {
	if !t.ok || utf8.RuneCountInString(s) > t.maxScan {
		return true
	}
	var lower string
	for _, a := range t.alts {
		if !a.need.Maybe(s, &lower) {
			continue
		}
		if a.re.MatchString(s) {
			return true
		}
	}
	return false
}

// secretKey is text.secret_key(key) for a string key: its normalised form
// (lower case, only a-z and 0-9) is not empty, not a name that counts
// tokens, and is one of the exact names or contains one of the parts.
func (t *secretTable) secretKey(key string) bool {
	if !t.ok {
		return true
	}
	lower := strings.ToLower(key)
	var b strings.Builder
	for i := 0; i < len(lower); i++ {
		if c := lower[i]; (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') {
			b.WriteByte(c)
		}
	}
	n := b.String()
	if n == "" || t.counts[n] {
		return false
	}
	if t.exact[n] {
		return true
	}
	for _, p := range t.parts {
		if strings.Contains(n, p) {
			return true
		}
	}
	return false
}

// plainValue reports that text.value(key, v, set()) is v itself: nothing
// in v is echoed otherwise. It says so for null and booleans; for a number
// or a string not under a secret key name, a string also matching no
// shape; for an array or object not under a secret key name whose every
// object key is neither a secret key name nor secret-shaped and whose
// every string matches no shape. Anything else, sets and non-string keys
// included, is a no (the policy redacts it, or Rego decides).
func (t *secretTable) plainValue(key, v ast.Value) bool {
	if !t.ok {
		return false
	}
	k, isString := key.(ast.String)
	secretKey := isString && t.secretKey(string(k))
	switch x := v.(type) {
	case ast.Null, ast.Boolean:
		return true
	case ast.Number:
		return !secretKey
	case ast.String:
		return (x == "" || !secretKey) && !t.suspect(string(x))
	case *ast.Array, ast.Object:
		return !secretKey && t.plainTree(v, 0)
	}
	return false
}

func (t *secretTable) plainTree(v ast.Value, depth int) bool {
	if depth > maxDepth {
		return false
	}
	switch x := v.(type) {
	case ast.Null, ast.Boolean, ast.Number:
		return true
	case ast.String:
		return !t.suspect(string(x))
	case *ast.Array:
		for i := 0; i < x.Len(); i++ {
			if !t.plainTree(x.Elem(i).Value, depth+1) {
				return false
			}
		}
		return true
	case ast.Object:
		ok := true
		x.Until(func(k, e *ast.Term) bool {
			ks, isString := k.Value.(ast.String)
			ok = isString && !t.secretKey(string(ks)) && !t.suspect(string(ks)) && t.plainTree(e.Value, depth+1)
			return !ok
		})
		return ok
	}
	return false
}
