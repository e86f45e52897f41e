package engine

import (
	"encoding/json"
	"regexp"
	"regexp/syntax"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/open-policy-agent/opa/v1/ast"
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
	need need
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
		parsed, err := syntax.Parse(src, syntax.Perl)
		if err != nil {
			return &secretTable{}
		}
		st.alts = append(st.alts, alternative{re: re, need: needOf(parsed.Simplify())})
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
		if !a.need.maybe(s, &lower) {
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

// need is what every match of a regular expression contains: one of lits
// as a substring (ASCII case folded where fold). any: no such promise.
type need struct {
	any  bool
	lits []needLit
}

type needLit struct {
	s    string // lower case when fold
	fold bool
}

// maybe reports whether s may hold a match: it contains one of the
// literals. lower caches s in ASCII lower case for folded literals.
func (n need) maybe(s string, lower *string) bool {
	if n.any {
		return true
	}
	for _, l := range n.lits {
		if l.fold {
			if *lower == "" && s != "" {
				*lower = asciiLower(s)
			}
			if strings.Contains(*lower, l.s) {
				return true
			}
		} else if strings.Contains(s, l.s) {
			return true
		}
	}
	return false
}

func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

var anything = need{any: true}

// maxClassLits bounds the characters of a class taken as literals.
const maxClassLits = 64

// needOf computes the need of a parsed, simplified regular expression:
// a literal needs itself; a class of few characters one of them; a
// concatenation its most selective part; an alternation one of its
// branches' needs; a repetition of at least once its body's; anything that
// can match without a character (empty, star, quest, assertions) or a
// large class nothing.
func needOf(re *syntax.Regexp) need {
	switch re.Op {
	case syntax.OpLiteral:
		if len(re.Rune) == 0 {
			return anything
		}
		for _, r := range re.Rune {
			if r == utf8.RuneError { // also what an invalid byte of s reads as
				return anything
			}
		}
		fold := re.Flags&syntax.FoldCase != 0
		if fold {
			for _, r := range re.Rune {
				if !asciiFoldOnly(r) {
					return anything
				}
			}
			return need{lits: []needLit{{s: asciiLower(string(re.Rune)), fold: true}}}
		}
		return need{lits: []needLit{{s: string(re.Rune)}}}
	case syntax.OpCharClass:
		var lits []needLit
		for i := 0; i+1 < len(re.Rune); i += 2 {
			if int(re.Rune[i+1]-re.Rune[i])+1+len(lits) > maxClassLits {
				return anything
			}
			for r := re.Rune[i]; r <= re.Rune[i+1]; r++ {
				if r == utf8.RuneError {
					return anything
				}
				lits = append(lits, needLit{s: string(r)})
			}
		}
		if len(lits) == 0 {
			return anything
		}
		return need{lits: lits}
	case syntax.OpCapture, syntax.OpPlus:
		return needOf(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min >= 1 {
			return needOf(re.Sub[0])
		}
		return anything
	case syntax.OpConcat:
		best := anything
		for _, sub := range re.Sub {
			if n := needOf(sub); !n.any && (best.any || better(n, best)) {
				best = n
			}
		}
		return best
	case syntax.OpAlternate:
		var lits []needLit
		for _, sub := range re.Sub {
			n := needOf(sub)
			if n.any {
				return anything
			}
			lits = append(lits, n.lits...)
		}
		return need{lits: lits}
	}
	return anything
}

// better prefers the need whose shortest literal is longer, then the one
// with fewer literals.
func better(a, b need) bool {
	sa, sb := shortest(a), shortest(b)
	if sa != sb {
		return sa > sb
	}
	return len(a.lits) < len(b.lits)
}

func shortest(n need) int {
	m := -1
	for _, l := range n.lits {
		if m < 0 || len(l.s) < m {
			m = len(l.s)
		}
	}
	return m
}

// asciiFoldOnly reports whether every rune that r case-folds to (its
// simple folding orbit) is ASCII, so an ASCII lower-casing compares it
// exactly (not so for k and s: the Kelvin sign and the long s).
func asciiFoldOnly(r rune) bool {
	if r >= utf8.RuneSelf {
		return false
	}
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		if f >= utf8.RuneSelf {
			return false
		}
	}
	return true
}
