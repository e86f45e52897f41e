package schemarego_test

import (
	"encoding/json"
	"errors"
	"sort"
	"strings"
	"testing"

	"github.com/mcpx/mcpx-policy/internal/config/schemarego"
	"github.com/mcpx/mcpx-policy/internal/jsonsuite"
)

// excluded are the suite files outside the acceptance count of issue 3
// (dynamic and remote references, vocabularies, and unevaluated*, which
// are supported but were not required). Their cases are still run.
var excluded = map[string]bool{
	"unevaluatedItems.json": true, "unevaluatedProperties.json": true,
	"dynamicRef.json": true, "refRemote.json": true, "vocabulary.json": true,
}

type fileCount struct {
	cases, accepted, refused, agreeing int
	refusedBy                          map[string]int
}

// TestSuite compiles every schema of the suite and evaluates every case of
// each accepted schema with OPA: no accepted case may disagree with the
// suite, and at least 950 of the 1,019 cases outside the excluded files must
// be accepted.
func TestSuite(t *testing.T) {
	counts := map[string]*fileCount{}
	for _, f := range jsonsuite.Files(t) {
		base := f.Name
		fc := &fileCount{refusedBy: map[string]int{}}
		counts[base] = fc
		for _, g := range f.Groups {
			fc.cases += len(g.Tests)
			schema := decodeJSON(t, string(g.Schema))
			r, err := prepare(schema)
			if err != nil {
				var se *schemarego.Error
				if !errors.As(err, &se) || strings.HasPrefix(se.Msg, "internal error") {
					t.Errorf("%s / %s: %v", base, g.Description, err)
					continue
				}
				fc.refused += len(g.Tests)
				fc.refusedBy[se.Keyword] += len(g.Tests)
				continue
			}
			fc.accepted += len(g.Tests)
			for _, c := range g.Tests {
				vs, err := r.violations(decodeJSON(t, string(c.Data)))
				if err != nil {
					t.Errorf("%s / %s / %s: evaluation error: %v", base, g.Description, c.Description, err)
					continue
				}
				if (len(vs) == 0) != c.Valid {
					t.Errorf("%s / %s / %s: suite says valid=%v, got violations %v\nschema %s\ndata %s\n%s",
						base, g.Description, c.Description, c.Valid, vs, g.Schema, c.Data, r.src)
					continue
				}
				fc.agreeing++
			}
		}
	}
	names := make([]string, 0, len(counts))
	for n := range counts {
		names = append(names, n)
	}
	sort.Strings(names)
	var tot, in fileCount
	var table strings.Builder
	table.WriteString("\nfile                           cases accepted refused agreeing  refused by\n")
	for _, n := range names {
		c := counts[n]
		var by []string
		for k, v := range c.refusedBy {
			if k == "" {
				k = "(invalid)"
			}
			by = append(by, k+"="+itoa(v))
		}
		sort.Strings(by)
		mark := ""
		if excluded[n] {
			mark = " *"
		}
		table.WriteString(pad(n+mark, 31) + padl(c.cases, 5) + padl(c.accepted, 9) + padl(c.refused, 8) + padl(c.agreeing, 9) + "  " + strings.Join(by, " ") + "\n")
		for _, acc := range []*fileCount{&tot, &in} {
			if acc == &in && excluded[n] {
				continue
			}
			acc.cases += c.cases
			acc.accepted += c.accepted
			acc.refused += c.refused
			acc.agreeing += c.agreeing
		}
	}
	table.WriteString(pad("total", 31) + padl(tot.cases, 5) + padl(tot.accepted, 9) + padl(tot.refused, 8) + padl(tot.agreeing, 9) + "\n")
	table.WriteString(pad("total without * files", 31) + padl(in.cases, 5) + padl(in.accepted, 9) + padl(in.refused, 8) + padl(in.agreeing, 9) + "\n")
	t.Log(table.String())
	if in.cases != 1019 {
		t.Errorf("expected 1019 cases outside the excluded files, found %d", in.cases)
	}
	if in.accepted < 950 {
		t.Errorf("accepted %d of %d cases outside the excluded files, want at least 950", in.accepted, in.cases)
	}
	if tot.agreeing != tot.accepted {
		t.Errorf("%d of %d accepted cases disagree with the suite", tot.accepted-tot.agreeing, tot.accepted)
	}
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

func pad(s string, n int) string {
	for len(s) < n {
		s += " "
	}
	return s
}

func padl(n, w int) string {
	s := itoa(n)
	for len(s) < w {
		s = " " + s
	}
	return s
}
