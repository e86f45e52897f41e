// Package regexneed finds what every match of a regular expression
// contains (one of a few literals), so that a search for many expressions
// can skip, without running it, each one a string cannot match. The
// engine's secret-shape predicate and render's redaction search the same
// table of shapes on every string they echo; most strings hold none of a
// shape's literals.
package regexneed

import (
	"math"
	"regexp/syntax"
	"strings"
	"sync"
	"sync/atomic"
	"unicode"
	"unicode/utf8"
)

// Need is what every match of an expression contains: one of its
// literals as a substring (ASCII case folded where Fold). An Any need
// promises nothing. The zero Need is Any.
type Need struct {
	lits []lit
}

type lit struct {
	s    string // lower case when fold
	fold bool
}

// Any reports whether n promises nothing.
func (n Need) Any() bool { return len(n.lits) == 0 }

// Of parses expr as regexp.Compile does (Perl syntax) and returns its
// need: a literal needs itself; a class of at most MaxClass characters one
// of them; a concatenation its most selective part, or what a run of its
// parts spells where it starts (g(?:hp_…|ithub_pat_…), as the parser
// factors ghp_…|github_pat_…, needs ghp_ or github_pat_, not g; at most
// MaxPrefixes strings), whichever is more selective; an alternation one of
// its branches' needs; a repetition of at least once its body's; anything
// that can match without a character (empty, star, quest, assertions) or
// a larger class nothing. A literal with the U+FFFD replacement character
// (also what an invalid byte of the searched string reads as) needs
// nothing; a folded literal needs its longest run of letters whose case
// variants are all ASCII (not k, s), nothing when it has none.
//
// A need is found once per process for each of the first maxKnown
// expressions (the secret table's shapes, which both the engine and
// redaction search): a Need is never changed once made, so callers share
// it. Safe for concurrent use.
func Of(expr string) (Need, error) {
	if n, ok := known.Load(expr); ok {
		return n.(Need), nil
	}
	re, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return Need{}, err
	}
	n := of(re.Simplify())
	if knownCount.Load() < maxKnown {
		if _, loaded := known.LoadOrStore(expr, n); !loaded {
			knownCount.Add(1)
		}
	}
	return n, nil
}

// maxKnown bounds the expressions whose need Of keeps.
const maxKnown = 256

var (
	known      sync.Map // expression → Need
	knownCount atomic.Int64
)

// MaxClass bounds the characters of a class taken as literals.
const MaxClass = 64

func of(re *syntax.Regexp) Need {
	switch re.Op {
	case syntax.OpLiteral:
		if len(re.Rune) == 0 {
			return Need{}
		}
		for _, r := range re.Rune {
			if r == utf8.RuneError {
				return Need{}
			}
		}
		if re.Flags&syntax.FoldCase != 0 {
			// a match holds, rune for rune, a case variant of each rune;
			// a run of runes whose variants are all ASCII is then in it,
			// ASCII case folded: the longest such run is the need
			var best, run []rune
			for _, r := range re.Rune {
				if !asciiFoldOnly(r) {
					run = run[:0]
					continue
				}
				run = append(run, r)
				if len(run) > len(best) {
					best = append(best[:0], run...)
				}
			}
			if len(best) == 0 {
				return Need{}
			}
			return Need{lits: []lit{{s: asciiLower(string(best)), fold: true}}}
		}
		return Need{lits: []lit{{s: string(re.Rune)}}}
	case syntax.OpCharClass:
		var lits []lit
		for i := 0; i+1 < len(re.Rune); i += 2 {
			if int(re.Rune[i+1]-re.Rune[i])+1+len(lits) > MaxClass {
				return Need{}
			}
			for r := re.Rune[i]; r <= re.Rune[i+1]; r++ {
				if r == utf8.RuneError {
					return Need{}
				}
				lits = append(lits, lit{s: string(r)})
			}
		}
		return Need{lits: lits}
	case syntax.OpCapture, syntax.OpPlus:
		return of(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min >= 1 {
			return of(re.Sub[0])
		}
		return Need{}
	case syntax.OpConcat:
		var best Need
		for _, sub := range re.Sub {
			if n := of(sub); !n.Any() && (best.Any() || better(n, best)) {
				best = n
			}
		}
		// what a run of parts starting at each one spells at its start:
		// the parser factors gh_…|github_pat_… into g(?:h…|ithub_pat_…),
		// whose parts alone need only the g
		for i := range re.Sub {
			if n := literals(prefixesFrom(re.Sub[i:])); !n.Any() && (best.Any() || better(n, best)) {
				best = n
			}
		}
		return best
	case syntax.OpAlternate:
		var lits []lit
		for _, sub := range re.Sub {
			n := of(sub)
			if n.Any() {
				return Need{}
			}
			lits = append(lits, n.lits...)
		}
		return Need{lits: lits}
	}
	return Need{}
}

// MaxPrefixes bounds the strings a run of parts spells at its start
// (prefixesFrom): past it, a need would be many literals to look for.
const MaxPrefixes = 16

// exact returns every string re matches, when they are at most
// MaxPrefixes, none has a case-folded letter and none holds U+FFFD; ok is
// false otherwise. An assertion (\b, ^, $) matches the empty string.
func exact(re *syntax.Regexp) (set []string, ok bool) {
	switch re.Op {
	case syntax.OpEmptyMatch, syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText, syntax.OpEndText,
		syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		return []string{""}, true
	case syntax.OpLiteral:
		for _, r := range re.Rune {
			if r == utf8.RuneError || (re.Flags&syntax.FoldCase != 0 && unicode.SimpleFold(r) != r) {
				return nil, false // a folded letter has case variants
			}
		}
		return []string{string(re.Rune)}, true
	case syntax.OpCharClass:
		n := 0
		for i := 0; i+1 < len(re.Rune); i += 2 {
			n += int(re.Rune[i+1]-re.Rune[i]) + 1
			if n > MaxPrefixes || (re.Rune[i] <= utf8.RuneError && utf8.RuneError <= re.Rune[i+1]) {
				return nil, false
			}
		}
		for i := 0; i+1 < len(re.Rune); i += 2 {
			for r := re.Rune[i]; r <= re.Rune[i+1]; r++ {
				set = append(set, string(r))
			}
		}
		return set, len(set) > 0
	case syntax.OpCapture:
		return exact(re.Sub[0])
	case syntax.OpConcat:
		set = []string{""}
		for _, sub := range re.Sub {
			e, ok := exact(sub)
			if !ok {
				return nil, false
			}
			if set = cross(set, e); len(set) > MaxPrefixes {
				return nil, false
			}
		}
		return set, true
	case syntax.OpAlternate:
		for _, sub := range re.Sub {
			e, ok := exact(sub)
			if !ok {
				return nil, false
			}
			if set = append(set, e...); len(set) > MaxPrefixes {
				return nil, false
			}
		}
		return set, true
	}
	return nil, false
}

// prefixes returns strings one of which starts every match of re; ok is
// false when it cannot tell. A set holding "" promises nothing.
func prefixes(re *syntax.Regexp) ([]string, bool) {
	if e, ok := exact(re); ok {
		return e, true
	}
	switch re.Op {
	case syntax.OpCapture, syntax.OpPlus:
		return prefixes(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min >= 1 {
			return prefixes(re.Sub[0])
		}
	case syntax.OpConcat:
		return prefixesFrom(re.Sub), true
	case syntax.OpAlternate:
		var set []string
		for _, sub := range re.Sub {
			p, ok := prefixes(sub)
			if !ok {
				return nil, false
			}
			if set = append(set, p...); len(set) > MaxPrefixes {
				return nil, false
			}
		}
		return set, true
	}
	return nil, false
}

// prefixesFrom returns strings one of which starts every match of the
// concatenation of subs: the parts' exact strings one after the other,
// then the prefixes of the first part that has none, while there are at
// most MaxPrefixes of them. It returns {""} when it cannot tell.
func prefixesFrom(subs []*syntax.Regexp) []string {
	set := []string{""}
	for _, sub := range subs {
		if e, ok := exact(sub); ok {
			next := cross(set, e)
			if len(next) > MaxPrefixes {
				return set
			}
			set = next
			continue
		}
		if p, ok := prefixes(sub); ok {
			if next := cross(set, p); len(next) <= MaxPrefixes {
				return next
			}
		}
		return set
	}
	return set
}

// cross is every string of a followed by every string of b.
func cross(a, b []string) []string {
	out := make([]string, 0, len(a)*len(b))
	for _, x := range a {
		for _, y := range b {
			out = append(out, x+y)
		}
	}
	return out
}

// minimal is the prefix set set without duplicates and without the
// strings another of set starts (a string holds what starts it: a need
// looks for the shorter only). Not for an exact set.
func minimal(set []string) []string {
	out := set[:0:0]
	for i, s := range set {
		covered := false
		for j, t := range set {
			if j != i && strings.HasPrefix(s, t) && (len(t) < len(s) || j < i) {
				covered = true
				break
			}
		}
		if !covered {
			out = append(out, s)
		}
	}
	return out
}

// literals is the need of a set of exact literals one of which every match
// holds: Any when the set is empty or holds "".
func literals(set []string) Need {
	if len(set) == 0 {
		return Need{}
	}
	set = minimal(set)
	lits := make([]lit, 0, len(set))
	for _, s := range set {
		if s == "" {
			return Need{}
		}
		lits = append(lits, lit{s: s})
	}
	return Need{lits: lits}
}

// better prefers the need whose shortest literal is longer, less half
// a character for each doubling of its literals (each is one
// more search of the string, but a string that passes a need is searched
// by the expression itself, which costs far more), then the one with
// fewer literals.
func better(a, b Need) bool {
	sa, sb := score(a), score(b)
	if sa != sb {
		return sa > sb
	}
	return len(a.lits) < len(b.lits)
}

func score(n Need) float64 {
	return float64(shortest(n)) - math.Log2(float64(len(n.lits)))/2
}

func shortest(n Need) int {
	m := -1
	for _, l := range n.lits {
		if m < 0 || len(l.s) < m {
			m = len(l.s)
		}
	}
	return m
}

// Maybe reports whether s may hold a match: it contains one of n's
// literals (always, for an Any need). lower caches s in ASCII lower case
// across calls on the same s, for folded literals ("" before the first).
func (n Need) Maybe(s string, lower *string) bool { return n.MaybeIn(s, lower, nil) }

// MaybeIn is Maybe told the bytes s holds (b = BytesOf(s); nil: not
// told): a literal with a byte s lacks (a folded letter in neither case)
// is ruled out without searching s for it. It answers what Maybe
// answers. Searching one string for many needs, this reads the string
// once instead of once per literal.
func (n Need) MaybeIn(s string, lower *string, b *Bytes) bool {
	if n.Any() {
		return true
	}
	for _, l := range n.lits {
		if b != nil && !b.holds(l) {
			continue
		}
		if !l.fold {
			if strings.Contains(s, l.s) {
				return true
			}
			continue
		}
		if *lower == "" && s != "" {
			*lower = asciiLower(s)
		}
		if strings.Contains(*lower, l.s) {
			return true
		}
	}
	return false
}

// Bytes is the set of the bytes of a string.
type Bytes struct{ bits [4]uint64 }

// BytesOf returns the bytes s holds.
func BytesOf(s string) Bytes {
	var b Bytes
	for i := 0; i < len(s); i++ {
		b.bits[s[i]>>6] |= 1 << (s[i] & 63)
	}
	return b
}

func (b *Bytes) has(c byte) bool { return b.bits[c>>6]&(1<<(c&63)) != 0 }

// holds reports whether b has every byte of l (of a folded letter, either
// case): else no string of b's bytes contains l.
func (b *Bytes) holds(l lit) bool {
	for i := 0; i < len(l.s); i++ {
		c := l.s[i]
		if b.has(c) || (l.fold && 'a' <= c && c <= 'z' && b.has(c-'a'+'A')) {
			continue
		}
		return false
	}
	return true
}

func asciiLower(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 'A' && c <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if c := b[j]; c >= 'A' && c <= 'Z' {
					b[j] = c + 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}

// asciiFoldOnly reports whether every rune that r case-folds to (its
// simple folding orbit) is ASCII, so that an ASCII lower-casing compares
// it exactly (not so for k and s: the Kelvin sign and the long s).
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
