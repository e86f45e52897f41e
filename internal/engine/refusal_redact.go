package engine

import (
	"encoding/json"
	"fmt"
	"math/big"
	"regexp"
	"sort"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/topdown/builtins"
)

// A refused string with secret-shaped parts is shown as text.show shows
// it: redacted by text.scrub(s, set()), then cut. The policy's redaction
// is not Go's (internal/redact judges random runs by their entropy, the
// policy by their distinct characters, and the policy hides a string
// longer than maxScan or with more than max_spans secrets whole), so this
// is text.rego's, step by step, on the same table: what each shape finds
// (_shape_finds: its submatch, named by a secret key name where the shape
// says so, not a scheme word), the random runs of what is left
// (_run_finds, _high), the lowest-ranked finder of each text (_merge), and
// every occurrence replaced, overlapping or touching ones by one marker
// (_apply). Counts, positions and cuts are in characters, as OPA's count,
// indexof_n and substring are. A string that may hold JSON text (whose
// JSON the policy reads too), is not valid UTF-8, or a table of a shape
// this code does not read, is not built here: the Rego decides.

// scrubber is the part of the secret table text.scrub reads besides the
// shapes' regexes (secretTable.alts).
type scrubber struct {
	shapes      []scrubShape
	schemes     map[string]bool
	trim        string
	run         *regexp.Regexp
	hex, uuid   *regexp.Regexp
	minRun      int
	minDigits   int
	denseRun    int
	denseDigits ast.Number
	minDistinct int
	last        lastScrub
}

// scrubShape is one shape: its regex, its kind, the submatch that is the
// secret and the one that must be a secret key name (0: none).
type scrubShape struct {
	re          *regexp.Regexp
	kind        string
	group, name int
}

// maxSpans is text.max_spans.
const maxSpans = 200

// runChars is text._run_chars.
const runChars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=_-"

// newScrubber reads the table's fields text.scrub reads; nil when one is
// missing or of another type.
func newScrubber(raw []byte) *scrubber {
	var t struct {
		Schemes *[]string `json:"schemes"`
		Trim    *string   `json:"trim"`
		Shapes  *[]struct {
			Kind  *string      `json:"kind"`
			RE    *string      `json:"re"`
			Group *json.Number `json:"group"`
			Name  *json.Number `json:"name"`
		} `json:"shapes"`
		Entropy *struct {
			Run         *string      `json:"run"`
			Hex         *string      `json:"hex"`
			UUID        *string      `json:"uuid"`
			MinRun      *json.Number `json:"minRun"`
			MinDigits   *json.Number `json:"minDigits"`
			DenseRun    *json.Number `json:"denseRun"`
			DenseDigits *json.Number `json:"denseDigits"`
			MinDistinct *json.Number `json:"minDistinct"`
		} `json:"entropy"`
	}
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.UseNumber()
	if dec.Decode(&t) != nil || t.Schemes == nil || t.Trim == nil || t.Shapes == nil || t.Entropy == nil {
		return nil
	}
	e := t.Entropy
	if e.Run == nil || e.Hex == nil || e.UUID == nil || e.MinRun == nil || e.MinDigits == nil || e.DenseRun == nil || e.DenseDigits == nil || e.MinDistinct == nil {
		return nil
	}
	small := func(n *json.Number) (int, bool) {
		i, err := n.Int64()
		return int(i), err == nil && i >= 0 && i < 1<<20 && string(*n) == fmt.Sprint(i)
	}
	sc := &scrubber{schemes: set(*t.Schemes), trim: *t.Trim, denseDigits: ast.Number(*e.DenseDigits)}
	var ok [4]bool
	sc.minRun, ok[0] = small(e.MinRun)
	sc.minDigits, ok[1] = small(e.MinDigits)
	sc.denseRun, ok[2] = small(e.DenseRun)
	sc.minDistinct, ok[3] = small(e.MinDistinct)
	if !ok[0] || !ok[1] || !ok[2] || !ok[3] {
		return nil
	}
	if _, valid := new(big.Float).SetString(string(sc.denseDigits)); !valid {
		return nil
	}
	var err error
	if sc.run, err = regexp.Compile(*e.Run); err != nil {
		return nil
	}
	if sc.hex, err = regexp.Compile(*e.Hex); err != nil {
		return nil
	}
	if sc.uuid, err = regexp.Compile(*e.UUID); err != nil {
		return nil
	}
	for _, sh := range *t.Shapes {
		if sh.Kind == nil || sh.RE == nil || sh.Group == nil || sh.Name == nil {
			return nil
		}
		re, err := regexp.Compile(*sh.RE)
		if err != nil {
			return nil
		}
		g, ok1 := small(sh.Group)
		n, ok2 := small(sh.Name)
		if !ok1 || !ok2 {
			return nil
		}
		sc.shapes = append(sc.shapes, scrubShape{re: re, kind: *sh.Kind, group: g, name: n})
	}
	return sc
}

// hit is a secret text's finder: its rank and kind.
type hit struct {
	rank int
	kind string
}

func (h hit) less(o hit) bool { return h.rank < o.rank || h.rank == o.rank && h.kind < o.kind }

// scrub is text.scrub(s, set()); ok is false when it is not built here.
func (t *secretTable) scrub(s string) (string, bool) {
	sc := t.scrubber
	if !t.ok || sc == nil || !utf8.ValidString(s) || mayBeJSON(s) {
		return "", false
	}
	if !t.suspect(s) {
		return s, true
	}
	if utf8.RuneCountInString(s) > t.maxScan {
		return sc.marker("long value", s), true
	}
	if out, hit := sc.last.get(s); hit {
		return out, true
	}
	hits := map[string]hit{}
	var lower string
	for rank, sh := range sc.shapes {
		// text._shape_finds searches with a shape that matches s: most
		// strings have what few shapes need (alternative.need)
		if a := t.alts[rank]; !a.need.Maybe(s, &lower) || !a.re.MatchString(s) {
			continue
		}
		for _, m := range sh.re.FindAllStringSubmatch(s, -1) {
			if sh.group >= len(m) {
				continue
			}
			val := m[sh.group]
			if val == "" || strings.HasPrefix(val, "[REDACTED") {
				continue
			}
			if sh.name > 0 {
				if sh.name >= len(m) || !t.secretKey(m[sh.name]) || sc.schemes[strings.ToLower(strings.Trim(val, sc.trim))] {
					continue
				}
			}
			merge(hits, val, hit{rank, sh.kind})
		}
	}
	masked, ok := sc.apply(s, hits)
	if !ok {
		return "", false
	}
	runs := hit{len(sc.shapes), "high-entropy"}
	for _, run := range sc.run.FindAllString(masked, -1) {
		segs := []string{run}
		if strings.HasPrefix(run, "/") || strings.HasPrefix(run, "~") {
			segs = strings.Split(run, "/")
		}
		for _, seg := range segs {
			if sc.high(seg) {
				merge(hits, seg, runs)
			}
		}
	}
	out, ok := sc.apply(s, hits)
	if ok {
		sc.last.put(s, out)
	}
	return out, ok
}

// lastScrub keeps the last string scrubbed and its redaction: the rules
// of a tool that check one argument refuse the same value, each rendering
// it.
type lastScrub struct {
	mu      sync.Mutex
	in, out string
	set     bool
}

func (l *lastScrub) get(s string) (string, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.out, l.set && l.in == s
}

func (l *lastScrub) put(in, out string) {
	l.mu.Lock()
	l.in, l.out, l.set = in, out, true
	l.mu.Unlock()
}

// merge keeps h as text's finder when it is the lowest-ranked (text._merge).
func merge(hits map[string]hit, text string, h hit) {
	if prev, seen := hits[text]; !seen || h.less(prev) {
		hits[text] = h
	}
}

// marker is text._marker(kind, s) with the table loaded.
func (sc *scrubber) marker(kind, s string) string {
	return fmt.Sprintf("[REDACTED %s, %d chars]", kind, utf8.RuneCountInString(strings.Trim(s, sc.trim)))
}

// high is text._high(run).
func (sc *scrubber) high(run string) bool {
	n := utf8.RuneCountInString(run)
	if n < sc.minRun || sc.uuid.MatchString(run) || sc.hex.MatchString(run) {
		return false
	}
	digits, uppers, lowers := 0, 0, 0
	for _, c := range run {
		switch {
		case c >= '0' && c <= '9':
			digits++
		case c >= 'A' && c <= 'Z':
			uppers++
		case c >= 'a' && c <= 'z':
			lowers++
		}
	}
	if digits < sc.minDigits || uppers+lowers == 0 {
		return false
	}
	if !(uppers >= 2 && lowers >= 2) && !(n >= sc.denseRun && sc.atLeast(digits, n)) {
		return false
	}
	distinct := 0
	for _, c := range runChars {
		if strings.ContainsRune(run, c) {
			distinct++
		}
	}
	return distinct >= sc.minDistinct
}

// atLeast is digits >= denseDigits * n as OPA computes it: the product of
// two int32-sized integers exactly, else of two integers exactly, else on
// big floats parsed from the numbers' texts (OPA's arithmetic), compared
// as OPA compares numbers.
func (sc *scrubber) atLeast(digits, n int) bool {
	nn := ast.Number(fmt.Sprint(n))
	var prod ast.Value
	if d, ok := sc.denseDigits.Int64(); ok && d >= -1<<31 && d < 1<<31 {
		prod = ast.Number(fmt.Sprint(d * int64(n)))
	} else if x, err := builtins.NumberToInt(sc.denseDigits); err == nil {
		prod = builtins.IntToNumber(new(big.Int).Mul(x, big.NewInt(int64(n))))
	} else {
		prod = builtins.FloatToNumber(new(big.Float).Mul(builtins.NumberToFloat(sc.denseDigits), builtins.NumberToFloat(nn)))
	}
	return ast.Compare(ast.Number(fmt.Sprint(digits)), prod) >= 0
}

// span is one occurrence of a secret text in s, in characters.
type span struct {
	a, b int
	h    hit
}

// apply is text._apply(s, hits): every occurrence (overlapping ones too,
// as indexof_n finds them) of every text replaced; occurrences that
// overlap or touch are one marker, named by the lowest-ranked finder of
// those that start where it starts; more than maxSpans texts or
// occurrences hide s whole.
func (sc *scrubber) apply(s string, hits map[string]hit) (string, bool) {
	if len(hits) == 0 {
		return s, true
	}
	if len(hits) > maxSpans {
		return sc.marker("many secrets", s), true
	}
	rs := []rune(s)
	var spans []span
	for text, h := range hits {
		tr := []rune(text)
		for p := 0; p+len(tr) <= len(rs); p++ {
			if runesEqual(rs[p:p+len(tr)], tr) {
				spans = append(spans, span{p, p + len(tr), h})
				if len(spans) > maxSpans {
					return sc.marker("many secrets", s), true
				}
			}
		}
	}
	if len(spans) == 0 {
		return s, true
	}
	var starts, ends []int
	for _, x := range spans {
		coveredStart, coveredEnd := false, false
		for _, y := range spans {
			coveredStart = coveredStart || y.a < x.a && x.a <= y.b
			coveredEnd = coveredEnd || y.a <= x.b && x.b < y.b
		}
		if !coveredStart {
			starts = append(starts, x.a)
		}
		if !coveredEnd {
			ends = append(ends, x.b)
		}
	}
	starts, ends = uniqSorted(starts), uniqSorted(ends)
	if len(starts) != len(ends) {
		return "", false
	}
	var b strings.Builder
	from := 0
	for i, a := range starts {
		if a < from || ends[i] <= a {
			return "", false
		}
		b.WriteString(string(rs[from:a]))
		first := hit{}
		found := false
		for _, x := range spans {
			if x.a == a && (!found || x.h.less(first)) {
				first, found = x.h, true
			}
		}
		b.WriteString(sc.marker(first.kind, string(rs[a:ends[i]])))
		from = ends[i]
	}
	b.WriteString(string(rs[from:]))
	return b.String(), true
}

func runesEqual(a, b []rune) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func uniqSorted(xs []int) []int {
	sort.Ints(xs)
	out := xs[:0]
	for i, x := range xs {
		if i == 0 || x != xs[i-1] {
			out = append(out, x)
		}
	}
	return out
}
