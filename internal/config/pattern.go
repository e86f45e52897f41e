package config

import (
	"fmt"
	"regexp"
	"strings"
)

// PatternKind says how a tool pattern was written.
type PatternKind int

// The three kinds of tool pattern (docs/configuration.md).
const (
	// Exact is a plain tool name.
	Exact PatternKind = iota
	// Glob holds *, ? or [ and matches the whole name.
	Glob
	// Regex is written /re/ and is an unanchored RE2 regular expression.
	Regex
)

// String names the kind: "exact", "glob" or "regex".
func (k PatternKind) String() string {
	switch k {
	case Glob:
		return "glob"
	case Regex:
		return "regex"
	default:
		return "exact"
	}
}

// Pattern is one parsed tool pattern. RE is the RE2 expression that
// matches exactly the tool names the pattern means: ^quoted$ for an exact
// name, an anchored translation for a glob, the body as written for /re/.
type Pattern struct {
	Source string      `dir:"part"`
	Kind   PatternKind `dir:"part"`
	RE     string      `dir:"part"`

	re *regexp.Regexp `dir:"part"`
}

// Match reports whether the tool name matches the pattern.
func (p Pattern) Match(name string) bool {
	if p.Kind == Exact {
		return name == p.Source
	}
	return p.re.MatchString(name)
}

// ParsePattern parses a tool pattern: an exact name; a glob when it holds
// *, ? or [ (anchored, * crosses /, ? is one character, [abc], [a-z] and
// negated [!a-z] or [^a-z] classes, \ escapes the next character); /re/
// is an unanchored RE2 expression. An empty pattern, a bad bracket, a bad
// escape or an invalid regex is an error.
func ParsePattern(s string) (Pattern, error) {
	p := Pattern{Source: s}
	switch {
	case s == "":
		return p, fmt.Errorf("empty tool pattern")
	case strings.HasPrefix(s, "/"):
		if len(s) < 2 || !strings.HasSuffix(s, "/") {
			return p, fmt.Errorf("tool pattern %q starts with / but does not end with / (a regex is written /re/)", s)
		}
		body := s[1 : len(s)-1]
		if body == "" {
			return p, fmt.Errorf("tool pattern %q is an empty regex", s)
		}
		re, err := regexp.Compile(body)
		if err != nil {
			return p, fmt.Errorf("tool pattern %q is not a valid RE2 regex: %v", s, err)
		}
		p.Kind, p.RE, p.re = Regex, body, re
		return p, nil
	case strings.ContainsAny(s, "*?["):
		body, err := globToRE2(s)
		if err != nil {
			return p, fmt.Errorf("tool pattern %q is not a valid glob: %v", s, err)
		}
		re, err := regexp.Compile(body)
		if err != nil {
			return p, fmt.Errorf("tool pattern %q is not a valid glob: %v", s, err)
		}
		p.Kind, p.RE, p.re = Glob, body, re
		return p, nil
	default:
		// Match compares an exact name as a string: no compiled regex
		// (a config of many named tools held one per name)
		p.Kind, p.RE = Exact, "^"+regexp.QuoteMeta(s)+"$"
		return p, nil
	}
}

// GlobToRE2 translates a glob into an anchored RE2 expression with the
// rules of ParsePattern; "(?s)" lets * and ? match any character.
func GlobToRE2(glob string) (string, error) {
	return globToRE2(glob)
}

func globToRE2(glob string) (string, error) {
	var b strings.Builder
	b.WriteString("(?s)^")
	rs := []rune(glob)
	for i := 0; i < len(rs); i++ {
		switch c := rs[i]; c {
		case '*':
			for i+1 < len(rs) && rs[i+1] == '*' {
				i++
			}
			b.WriteString(".*")
		case '?':
			b.WriteString(".")
		case '\\':
			if i+1 >= len(rs) {
				return "", fmt.Errorf("trailing \\ at the end")
			}
			i++
			b.WriteString(regexp.QuoteMeta(string(rs[i])))
		case '[':
			n, class, err := globClass(rs[i:])
			if err != nil {
				return "", err
			}
			b.WriteString(class)
			i += n - 1
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	b.WriteString("$")
	return b.String(), nil
}

// globClass translates the bracket expression at the start of rs and
// returns how many runes it used.
func globClass(rs []rune) (int, string, error) {
	i := 1
	var b strings.Builder
	b.WriteString("[")
	if i < len(rs) && (rs[i] == '!' || rs[i] == '^') {
		b.WriteString("^")
		i++
	}
	start := i
	for {
		if i >= len(rs) {
			return 0, "", fmt.Errorf("unterminated [ (a class ends with ])")
		}
		c := rs[i]
		if c == ']' && i > start {
			break
		}
		if c == '\\' {
			if i+1 >= len(rs) {
				return 0, "", fmt.Errorf("unterminated [ (a class ends with ])")
			}
			i++
			c = rs[i]
		}
		lo := c
		i++
		if i+1 < len(rs) && rs[i] == '-' && rs[i+1] != ']' {
			hi := rs[i+1]
			i += 2
			if hi == '\\' {
				if i >= len(rs) {
					return 0, "", fmt.Errorf("unterminated [ (a class ends with ])")
				}
				hi = rs[i]
				i++
			}
			if hi < lo {
				return 0, "", fmt.Errorf("bad range %c-%c in [ ]", lo, hi)
			}
			b.WriteString(classChar(lo) + "-" + classChar(hi))
		} else {
			b.WriteString(classChar(lo))
		}
	}
	b.WriteString("]")
	return i + 1, b.String(), nil
}

// classChar escapes a rune for use inside an RE2 character class.
func classChar(r rune) string {
	switch r {
	case '\\', ']', '[', '^', '-':
		return `\` + string(r)
	}
	if r < 0x20 || r == 0x7f {
		return fmt.Sprintf(`\x{%x}`, r)
	}
	return string(r)
}
