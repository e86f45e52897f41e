// Package regexneed finds what every match of a regular expression
// contains (one of a few literals), so that a search for many expressions
// can skip, without running it, each one a string cannot match. The
// engine's secret-shape predicate and render's redaction search the same
// table of shapes on every string they echo; most strings hold none of a
// shape's literals.
package regexneed

import (
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
// of them; a concatenation its most selective part; an alternation one of
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

// better prefers the need whose shortest literal is longer, then the one
// with fewer literals.
func better(a, b Need) bool {
	sa, sb := shortest(a), shortest(b)
	if sa != sb {
		return sa > sb
	}
	return len(a.lits) < len(b.lits)
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
func (n Need) Maybe(s string, lower *string) bool {
	if n.Any() {
		return true
	}
	for _, l := range n.lits {
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
