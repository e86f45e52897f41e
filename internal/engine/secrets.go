package engine

import (
	"encoding/json"
	"regexp"
	"sort"
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
	ok       bool
	maxScan  int
	exact    map[string]bool
	counts   map[string]bool
	parts    []string
	names    map[string]bool // nameFields: text._name_field
	pairKey  *regexp.Regexp  // text._pair_key
	lineWord int             // text._word
	alts     []alternative   // the shapes' regexes and the entropy run: text._any
	scrubber *scrubber       // what text.scrub reads besides (refusal_redact.go); nil: not built in Go
}

// mayBeJSON is text._json_start (^[ \t\n\r]*[\[{"]): a string that may
// hold JSON text, which the policy reads as JSON too.
func mayBeJSON(s string) bool {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case ' ', '\t', '\n', '\r':
		case '[', '{', '"':
			return true
		default:
			return false
		}
	}
	return false
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
		KeyParts   *[]string `json:"keyParts"`
		KeyExact   *[]string `json:"keyExact"`
		KeyCounts  *[]string `json:"keyCounts"`
		NameFields *[]string `json:"nameFields"`
		PairKey    *string   `json:"pairKey"`
		LineWord   *int      `json:"lineWord"`
		Shapes     *[]struct {
			RE *string `json:"re"`
		} `json:"shapes"`
		Entropy *struct {
			Run *string `json:"run"`
		} `json:"entropy"`
		MaxScan *json.Number `json:"maxScan"`
	}
	if json.Unmarshal(raw, &t) != nil || t.KeyParts == nil || t.KeyExact == nil || t.KeyCounts == nil ||
		t.NameFields == nil || t.PairKey == nil || t.LineWord == nil || t.Shapes == nil || t.Entropy == nil || t.Entropy.Run == nil || t.MaxScan == nil {
		return &secretTable{}
	}
	maxScan, err := t.MaxScan.Int64()
	if err != nil || maxScan < 0 {
		return &secretTable{}
	}
	pairKey, err := regexp.Compile(*t.PairKey)
	if err != nil {
		return &secretTable{}
	}
	st := &secretTable{ok: true, maxScan: int(maxScan), exact: set(*t.KeyExact), counts: set(*t.KeyCounts), parts: *t.KeyParts,
		names: set(*t.NameFields), pairKey: pairKey, lineWord: *t.LineWord}
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
	if sc := newScrubber(raw); sc != nil && len(sc.shapes)+1 == len(st.alts) {
		st.scrubber = sc // its shapes are the alternatives' regexes, in order
	}
	return st
}

// normalise is a key as the policy compares it: lower case, only a-z
// and 0-9.
func normalise(key string) string {
	lower := strings.ToLower(key)
	var b strings.Builder
	for i := 0; i < len(lower); i++ {
		if c := lower[i]; (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') {
			b.WriteByte(c)
		}
	}
	return b.String()
}

func set(xs []string) map[string]bool {
	m := make(map[string]bool, len(xs))
	for _, x := range xs {
		m[x] = true
	}
	return m
}

// suspect is text._suspect(s): the table is missing, s is longer than
// maxScan characters, s may hold JSON text, or some shape or the entropy
// run matches in s.
func (t *secretTable) suspect(s string) bool {
	if !t.ok || utf8.RuneCountInString(s) > t.maxScan || mayBeJSON(s) {
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
	return t.secretName(normalise(key))
}

// secretName is secretKey of a normalised key.
func (t *secretTable) secretName(n string) bool {
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
// object key is neither a secret key name nor secret-shaped, whose every
// string matches no shape, and where no structure names a secret (no name
// field holds a secret key name, no array element is one that names the
// next, no command line of an array's strings matches a shape). Anything
// else, sets and non-string keys included, is a no (the policy redacts
// it, or Rego decides).
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
		if depth == 0 && !t.plainLine(nil, x) {
			return false
		}
		for i := 0; i < x.Len(); i++ {
			e := x.Elem(i).Value
			if s, ok := e.(ast.String); ok && i+1 < x.Len() && t.pairKey.MatchString(string(s)) && t.secretKey(string(s)) {
				return false // it names the next element
			}
			if a, ok := e.(*ast.Array); ok && !t.plainLine(nil, a) {
				return false
			}
			if !t.plainTree(e, depth+1) {
				return false
			}
		}
		return true
	case ast.Object:
		ok := true
		x.Until(func(k, e *ast.Term) bool {
			ks, isString := k.Value.(ast.String)
			n := normalise(string(ks))
			ok = isString && !t.secretName(n) && !t.suspect(string(ks))
			if ok && t.names[n] {
				if s, isStr := e.Value.(ast.String); isStr && t.secretKey(string(s)) {
					ok = false // it names the members beside it
				}
			}
			if a, isArr := e.Value.(*ast.Array); ok && isArr {
				ok = t.plainLine(x, a)
			}
			ok = ok && t.plainTree(e.Value, depth+1)
			return !ok
		})
		return ok
	}
	return false
}

// plainLine reports that the command line of array a (text._line: the
// words among the string members of beside in key order, then a's words,
// joined by spaces, when a has one and at least two take part) matches no
// shape: text._ctx_finds has nothing for a.
func (t *secretTable) plainLine(beside ast.Object, a *ast.Array) bool {
	own := 0
	for i := 0; i < a.Len(); i++ {
		if s, ok := a.Elem(i).Value.(ast.String); ok && t.word(string(s)) {
			own++
		}
	}
	if own == 0 {
		return true // no word of its own: no command line
	}
	strs := own
	if beside != nil && strs < 2 {
		beside.Until(func(_, v *ast.Term) bool {
			if s, ok := v.Value.(ast.String); ok && t.word(string(s)) {
				strs++
			}
			return strs >= 2
		})
	}
	if strs < 2 {
		return true // one string is judged by itself
	}
	var keys []string
	if beside != nil {
		beside.Foreach(func(k, v *ast.Term) {
			ks, ok1 := k.Value.(ast.String)
			if s, ok2 := v.Value.(ast.String); ok1 && ok2 && t.word(string(s)) {
				keys = append(keys, string(ks))
			}
		})
		sort.Strings(keys)
	}
	parts := make([]string, 0, len(keys)+own)
	for _, k := range keys {
		parts = append(parts, string(beside.Get(ast.StringTerm(k)).Value.(ast.String)))
	}
	for i := 0; i < a.Len(); i++ {
		if s, ok := a.Elem(i).Value.(ast.String); ok && t.word(string(s)) {
			parts = append(parts, string(s))
		}
	}
	return !t.shaped(strings.Join(parts, " "))
}

// shaped reports whether some shape of the table (not the entropy run)
// matches in s, at any length: text._shape_finds may find something. A
// missing table is a yes.
func (t *secretTable) shaped(s string) bool {
	if !t.ok {
		return true
	}
	var lower string
	for _, a := range t.alts[:len(t.alts)-1] {
		if a.need.Maybe(s, &lower) && a.re.MatchString(s) {
			return true
		}
	}
	return false
}

// nameField is text._name_field: the key, normalised, is one of the
// table's nameFields. An ASCII key is normalised without allocating.
func (t *secretTable) nameField(key string) bool {
	if len(key) > 64 {
		return t.names[normalise(key)]
	}
	var buf [64]byte
	n := 0
	for i := 0; i < len(key); i++ {
		c := key[i]
		switch {
		case c >= 0x80:
			return t.names[normalise(key)] // ToLower of other scripts may give a-z
		case c >= 'A' && c <= 'Z':
			buf[n] = c + 'a' - 'A'
			n++
		case c >= 'a' && c <= 'z' || c >= '0' && c <= '9':
			buf[n] = c
			n++
		}
	}
	return t.names[string(buf[:n])]
}

// word is text._word: at most lineWord characters and no line break.
func (t *secretTable) word(s string) bool {
	return len(s) <= 4*t.lineWord && utf8.RuneCountInString(s) <= t.lineWord && !strings.Contains(s, "\n")
}

// plainArgs is lib.predicates.plain_args: no structure of args names a
// secret. It says no for an object with a name field holding a secret key
// name, an array with a string element that matches pairKey and names a
// secret before another element, an array whose command line is suspect
// (plainLine), and anything deeper than maxDepth; text._named_roots and
// text._ctx_finds find something only where one of these is.
func (t *secretTable) plainArgs(v ast.Value) bool {
	if !t.ok {
		return false
	}
	return t.structureFree(nil, v, 0)
}

func (t *secretTable) structureFree(beside ast.Object, v ast.Value, depth int) bool {
	if depth > maxDepth {
		return false
	}
	switch x := v.(type) {
	case *ast.Array:
		if !t.plainLine(beside, x) {
			return false
		}
		for i := 0; i < x.Len(); i++ {
			e := x.Elem(i).Value
			if s, ok := e.(ast.String); ok && i+1 < x.Len() && t.pairKey.MatchString(string(s)) && t.secretKey(string(s)) {
				return false
			}
			if !t.structureFree(nil, e, depth+1) {
				return false
			}
		}
	case ast.Object:
		ok := true
		x.Until(func(k, e *ast.Term) bool {
			if ks, isString := k.Value.(ast.String); isString && t.nameField(string(ks)) {
				if s, isStr := e.Value.(ast.String); isStr && t.secretKey(string(s)) {
					ok = false
					return true
				}
			}
			ok = t.structureFree(x, e.Value, depth+1)
			return !ok
		})
		return ok
	case ast.Set:
		return false // the policy reads a set as an array: let it decide
	}
	return true
}

// plainGoArgs is plainArgs for the caller's decoded arguments (the Go
// types plainGo accepts): the refusal builder asks it once per refusal it
// renders, without converting the arguments. Any other Go type is a no.
func (t *secretTable) plainGoArgs(args map[string]any) bool {
	if !t.ok {
		return false
	}
	return t.structureFreeGo(nil, args, 0)
}

func (t *secretTable) structureFreeGo(beside map[string]any, v any, depth int) bool {
	if depth > maxDepth {
		return false
	}
	switch x := v.(type) {
	case []any:
		if !t.plainLineGo(beside, x) {
			return false
		}
		for i, e := range x {
			if s, ok := e.(string); ok && i+1 < len(x) && t.pairKey.MatchString(s) && t.secretKey(s) {
				return false
			}
			if !t.structureFreeGo(nil, e, depth+1) {
				return false
			}
		}
		return true
	case map[string]any:
		for k, e := range x {
			if s, isStr := e.(string); isStr && t.nameField(k) && t.secretKey(s) {
				return false
			}
			if !t.structureFreeGo(x, e, depth+1) {
				return false
			}
		}
		return true
	case nil, bool, string, json.Number, float64, int, int64:
		return true
	}
	return false
}

// plainLineGo is plainLine for the caller's decoded arguments.
func (t *secretTable) plainLineGo(beside map[string]any, a []any) bool {
	own := 0
	for _, e := range a {
		if s, ok := e.(string); ok && t.word(s) {
			own++
		}
	}
	if own == 0 {
		return true
	}
	var keys []string
	for k, e := range beside {
		if s, ok := e.(string); ok && t.word(s) {
			keys = append(keys, k)
		}
	}
	if own+len(keys) < 2 {
		return true // one string is judged by itself
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys)+own)
	for _, k := range keys {
		parts = append(parts, beside[k].(string))
	}
	for _, e := range a {
		if s, ok := e.(string); ok && t.word(s) {
			parts = append(parts, s)
		}
	}
	return !t.shaped(strings.Join(parts, " "))
}
