package engine

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/open-policy-agent/opa/v1/ast"
)

// The text helpers of rego/mcpx/lib/text.rego that a refusal's details
// use, in Go, for values the secret table leaves as they are. A value the
// table would change (redaction) is not built here: the helpers say so
// (ok false) and the Rego decides. Counts and cuts are in characters, as
// OPA's count and substring are.

// maxValueChars is text.max_value_chars.
const maxValueChars = 120

// jsonText is OPA's json.marshal of v.
func jsonText(v ast.Value) (string, bool) {
	x, err := ast.JSON(v)
	if err != nil {
		return "", false
	}
	b, err := json.Marshal(x)
	if err != nil {
		return "", false
	}
	return string(b), true
}

// runes is count(s).
func runes(s string) int { return len([]rune(s)) }

// prefix is substring(s, 0, n).
func prefix(s string, n int) string {
	rs := []rune(s)
	if n > len(rs) {
		n = len(rs)
	}
	return string(rs[:n])
}

// quote is text.quote(s, n) (cut, guard.go, is text.cut).
func quote(s string, n int) string { return jsonString(cut(s, n)) }

// jsonString is OPA's json.marshal of a string.
func jsonString(s string) string {
	b, err := json.Marshal(s)
	if err != nil {
		return `""`
	}
	return string(b)
}

// plainText is the text of a string the policy echoes as it is
// (text.redact, text.redact_key and text.redact_pointer leave it
// unchanged): ok is false when the secret table would look at it.
func (r *refusals) plainText(s string) (string, bool) {
	return s, !r.preds.secrets.suspect(s)
}

// show is text.show(key, v): v, or when long, its first characters and
// its size; a value the secret table leaves as it is
// (lib.predicates.plain_value) is shown as it is, a string it would not is
// redacted first (text.value: whole under a secret key name, else
// text.scrub). ok is false for any other value the table would redact,
// and for a string scrub is not built for: the Rego decides.
func (r *refusals) show(key string, v ast.Value) (ast.Value, bool) {
	s, isString := v.(ast.String)
	if isString {
		if out, hit := r.shown.get(key, string(s)); hit {
			return out, true
		}
	}
	out, ok := r.showOnce(key, v)
	if ok && isString {
		r.shown.put(key, string(s), out)
	}
	return out, ok
}

func (r *refusals) showOnce(key string, v ast.Value) (ast.Value, bool) {
	if !r.preds.secrets.plainValue(ast.String(key), v) {
		s, isString := v.(ast.String)
		if !isString {
			return nil, false
		}
		t := r.preds.secrets
		var red string
		if s != "" && t.secretKey(key) {
			if t.scrubber == nil || !utf8.ValidString(string(s)) {
				return nil, false
			}
			red = t.scrubber.marker("by key name", string(s)) // text._by_name
		} else {
			var ok bool
			if red, ok = t.scrub(string(s)); !ok {
				return nil, false
			}
		}
		return cutShown(red, string(s)), true
	}
	if s, ok := v.(ast.String); ok {
		return cutShown(string(s), string(s)), true
	}
	text, ok := jsonText(v)
	if !ok {
		return nil, false
	}
	if runes(text) <= maxValueChars {
		return v, true
	}
	return ast.String(fmt.Sprintf("%s… (%d bytes)", prefix(text, maxValueChars), runes(text))), true
}

// lastShown keeps the last string shown, under its key: the rules of a
// tool that check one argument refuse the same value, each rendering it
// (a scalar's rendering is kept with its finding, refusal_memo.go; a long
// string's is not), and show is a function of the key and the string.
type lastShown struct {
	mu      sync.Mutex
	key, in string
	out     ast.Value
}

func (l *lastShown) get(key, s string) (ast.Value, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.out, l.out != nil && l.key == key && l.in == s
}

func (l *lastShown) put(key, s string, out ast.Value) {
	l.mu.Lock()
	l.key, l.in, l.out = key, s, out
	l.mu.Unlock()
}

// cutShown is text._cut(r, v) for a string r shown for the string v: r,
// or when long, its first characters and v's size.
func cutShown(r, v string) ast.Value {
	if runes(r) <= maxValueChars {
		return ast.String(r)
	}
	return ast.String(fmt.Sprintf("%s… (%d characters)", prefix(r, maxValueChars), runes(v)))
}

// unescape is text.unescape: a JSON Pointer token's key.
func unescape(t string) string {
	if !strings.Contains(t, "~") {
		return t
	}
	return strings.ReplaceAll(strings.ReplaceAll(t, "~1", "/"), "~0", "~")
}

// escapeKey is text._escape for a string key.
func escapeKey(k string) string {
	if !strings.Contains(k, "~") && !strings.Contains(k, "/") {
		return k
	}
	return strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1")
}

// lastKey is steps.rules._last_key(ptr): the key of a pointer's last
// token, "" for the root; ok false for a non-empty text that is not a
// pointer (the Rego leaves it undefined).
func lastKey(ptr string) (string, bool) {
	if ptr == "" {
		return "", true
	}
	i := strings.LastIndexByte(ptr, '/')
	if i < 0 {
		return "", false
	}
	return unescape(ptr[i+1:]), true
}

// nearest is text.nearest(key, candidates): the candidate most like key,
// "" when none is at least half alike (the Dice coefficient over the
// bigrams of the lowercased, space-padded names, 0.9 for an anagram; ties
// to the first in sort order). shapes are the candidates' shapes
// (shapeOf), in their order. The likeness is compared exactly, as a
// fraction of two integers: OPA divides on floats of 64 bits of
// precision, which round two fractions of such small terms alike only
// when they are equal.
func nearest(key string, candidates []string, shapes []shape) string {
	k := shapeOf(key)
	var bestNum, bestDen int64
	bestC := ""
	found := false
	for i, c := range candidates {
		b := shapes[i]
		common := 0
		for g := range k.bigrams {
			if b.bigrams[g] {
				common++
			}
		}
		// the likeness num/den (den > 0: a padded name has a bigram)
		num, den := int64(2*common), int64(len(k.bigrams)+len(b.bigrams))
		if slicesEqual(k.letters, b.letters) && 9*den > 10*num {
			num, den = 9, 10
		}
		if 2*num < den {
			continue
		}
		if !found || num*bestDen > bestNum*den || (num*bestDen == bestNum*den && c < bestC) {
			bestNum, bestDen, bestC, found = num, den, c, true
		}
	}
	return bestC
}

type shape struct {
	bigrams map[string]bool
	letters []string
}

// shapeOf is text._shape(s).
func shapeOf(s string) shape {
	lower := strings.ToLower(s)
	p := []rune(" " + lower + " ")
	sh := shape{bigrams: make(map[string]bool, len(p))}
	for i := 0; i+1 < len(p); i++ {
		sh.bigrams[string(p[i:i+2])] = true
	}
	sh.letters = strings.Split(lower, "")
	sort.Strings(sh.letters)
	return sh
}

func slicesEqual(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
