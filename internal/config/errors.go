package config

import (
	"fmt"
	"strings"
)

// ConfigError is one load-time configuration error. File is the file that
// holds the problem as it was named (or "env $NAME" for an environment
// variable, "flags" for a LoadOptions.Set override), Line is 1-based (0
// when there is no line), Path is the dotted config path
// ("servers.fs.argumentRules[0].tools[1]") and Msg says what is wrong and
// what is allowed.
type ConfigError struct {
	File string
	Line int
	Path string
	Msg  string
}

// Error renders "file:line: path: msg", dropping the parts that are empty.
func (e *ConfigError) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		if e.Line > 0 {
			fmt.Fprintf(&b, ":%d", e.Line)
		}
		b.WriteString(": ")
	}
	if e.Path != "" {
		b.WriteString(e.Path)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// ConfigErrors is every error found by one Load, in file and line order of
// discovery. It is the error Load returns; errors.As finds each
// *ConfigError through Unwrap.
type ConfigErrors []*ConfigError

// Error renders one error per line.
func (es ConfigErrors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap returns the individual errors.
func (es ConfigErrors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}

// Warning is a finding that does not stop the load, such as a pattern that
// matches no tool of the catalog. The fields mean what they mean in
// ConfigError.
type Warning struct {
	File string `json:"file"`
	Line int    `json:"line"`
	Path string `json:"path"`
	Msg  string `json:"message"`

	// server is, for a loosening, the server whose setting it is; "" for
	// a setting of every server (policy, pool, ledger).
	server string
}

// String renders "file:line: path: msg" like ConfigError.
func (w Warning) String() string {
	return (&ConfigError{File: w.File, Line: w.Line, Path: w.Path, Msg: w.Msg}).Error()
}

// collector gathers errors for one load.
type collector struct {
	errs ConfigErrors
}

func (c *collector) add(file string, line int, path, format string, args ...any) {
	c.errs = append(c.errs, &ConfigError{File: file, Line: line, Path: path, Msg: fmt.Sprintf(format, args...)})
}

func (c *collector) err() error {
	if len(c.errs) == 0 {
		return nil
	}
	return c.errs
}

// nearest returns the candidate closest to s by edit distance, or "" when
// none is close enough to be a likely typo.
func nearest(s string, candidates []string) string {
	best, bestD := "", -1
	for _, c := range candidates {
		if strings.EqualFold(s, c) {
			return c
		}
		d := editDistance(strings.ToLower(s), strings.ToLower(c))
		if bestD < 0 || d < bestD {
			best, bestD = c, d
		}
	}
	limit := max(2, len(s)/3)
	if bestD < 0 || bestD > limit {
		return ""
	}
	return best
}

func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}
