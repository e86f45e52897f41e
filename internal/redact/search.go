package redact

import (
	"regexp/syntax"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"
)

// How strings are searched fast. Four shortcuts, each finding exactly
// what the table's regular expressions and key names find:
//
//   - a shape runs on a string only when the string holds its need
//     (internal/regexneed: a literal every match holds), and a need is
//     searched for only when the string has each of its bytes (the
//     string's bytes are read once for every shape);
//   - the random-looking runs (Secrets.Entropy.Run, a class of ASCII
//     characters repeated at least n times) are found byte by byte;
//   - a memo keeps what one decision's redaction found in each string it
//     searched, so a string searched again — a violation's value is an
//     argument's, the second pass reads the first pass's output, an ask's
//     prompt shows the arguments the decision was redacted with, a
//     decision that changed is redacted again — costs a map lookup;
//   - an ASCII key name is compared with the table byte by byte, without
//     a copy.
//
// reference turns the four off: the tests compare the two searches over
// generated strings and decisions. Never set outside tests.
var reference atomic.Bool

// runScan finds the runs of an expression of the form [class]{n,} (a
// greedy repetition, n ≥ 1, of a class of ASCII characters) byte by byte:
// the leftmost-first matches of such an expression are exactly the
// maximal runs of the class's bytes at least n long (a byte outside ASCII
// is never in the class, whether it starts a character or not).
type runScan struct {
	in  [256]bool
	min int
}

// newRunScan returns the scanner of expr, or nil when expr has another
// form (its regular expression finds the runs then).
func newRunScan(expr string) *runScan {
	re, err := syntax.Parse(expr, syntax.Perl)
	if err != nil || re.Op != syntax.OpRepeat || re.Max != -1 || re.Min < 1 || re.Flags&syntax.NonGreedy != 0 ||
		re.Sub[0].Op != syntax.OpCharClass {
		return nil
	}
	rs := &runScan{min: re.Min}
	cls := re.Sub[0].Rune
	for i := 0; i+1 < len(cls); i += 2 {
		if cls[i+1] >= utf8.RuneSelf {
			return nil
		}
		for c := cls[i]; c <= cls[i+1]; c++ {
			rs.in[c] = true
		}
	}
	return rs
}

// find returns the runs of s, as FindAllString(s, -1) of the expression.
func (rs *runScan) find(s string) []string {
	var out []string
	for i := 0; i < len(s); {
		if !rs.in[s[i]] {
			i++
			continue
		}
		j := i + 1
		for j < len(s) && rs.in[s[j]] {
			j++
		}
		if j-i >= rs.min {
			out = append(out, s[i:j])
		}
		i = j
	}
	return out
}

// runs returns the random-looking run candidates of s
// (Secrets.Entropy.Run), leftmost first.
func runs(s string) []string {
	if t := table(); t.runs != nil && !reference.Load() {
		return t.runs.find(s)
	}
	return table().run.FindAllString(s, -1)
}

// memo is what one decision's redaction found in each string it searched
// (the text and found of redactTextCtx, for a string no known or nearby
// secret was searched for in), in each command line an array makes, and
// each secret's escapings. Redacting a
// string is a pure function of it, so the memo changes no output. Safe
// for concurrent use: a redacted decision's prompt may be built on
// another goroutine.
type memo struct {
	mu    sync.Mutex
	text  map[memoKey]memoText
	esc   map[string][]string
	lines map[string]map[string]hit // command lines → what the shapes find (nil: nothing)
}

type memoKey struct {
	s     string
	paths bool
}

type memoText struct {
	out   string
	found map[string]string // read only: shared by every lookup
}

// escapings is escapings(sec), found once per memo.
func (m *memo) escapings(sec string) []string {
	if m == nil || reference.Load() {
		return escapings(sec)
	}
	m.mu.Lock()
	e, ok := m.esc[sec]
	m.mu.Unlock()
	if ok {
		return e
	}
	e = escapings(sec)
	m.mu.Lock()
	if m.esc == nil {
		m.esc = map[string][]string{}
	}
	m.esc[sec] = e
	m.mu.Unlock()
	return e
}

// search is redactTextCtx(s, known, extra, pathSegments), looked up in m
// (nil: none) when neither a known secret nor a text of extra is in s.
// The map it returns is read only.
func (m *memo) search(s string, known map[string]string, extra map[string]hit, pathSegments bool) (string, map[string]string) {
	if m == nil || reference.Load() || len(extra) > 0 || m.holdsKnown(s, known) {
		return redactTextCtx(s, known, extra, pathSegments, m)
	}
	k := memoKey{s, pathSegments}
	m.mu.Lock()
	t, ok := m.text[k]
	m.mu.Unlock()
	if ok {
		return t.out, t.found
	}
	t.out, t.found = redactTextCtx(s, nil, nil, pathSegments, m)
	m.mu.Lock()
	if m.text == nil {
		m.text = map[memoKey]memoText{}
	}
	m.text[k] = t
	m.mu.Unlock()
	return t.out, t.found
}

// holdsKnown reports whether s holds a secret of known that
// redactTextCtx searches for (at least Secrets.MinScrub long, in one of
// its escapings).
func (m *memo) holdsKnown(s string, known map[string]string) bool {
	for sec := range known {
		if len(sec) < Secrets.MinScrub {
			continue
		}
		for _, v := range m.escapings(sec) {
			if strings.Contains(s, v) {
				return true
			}
		}
	}
	return false
}

// line is what the shapes find in the command line line (shapeSecrets),
// or nil for nothing, found once per memo (nil: none). The map is read
// only.
func (m *memo) line(line string) map[string]hit {
	find := func() map[string]hit {
		if found := shapeSecrets(line); len(found) > 0 {
			return found
		}
		return nil
	}
	if m == nil || reference.Load() {
		return find()
	}
	m.mu.Lock()
	found, ok := m.lines[line]
	m.mu.Unlock()
	if ok {
		return found
	}
	found = find()
	m.mu.Lock()
	if m.lines == nil {
		m.lines = map[string]map[string]hit{}
	}
	m.lines[line] = found
	m.mu.Unlock()
	return found
}
