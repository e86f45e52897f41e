package regexneed_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/mcpx/mcpx-policy/internal/redact"
	"github.com/mcpx/mcpx-policy/internal/regexneed"
)

// exprs are the secret table's shapes and run, and expressions around the
// cases a need could get wrong: case folding (k, s), classes, repetition,
// alternation with an empty branch, anchors.
func exprs() []string {
	out := []string{redact.Secrets.Entropy.Run, `(?i)kelvin`, `(?i)s[a-z]+`, `(?i)basic\s+x`, `(?i)askable`, `(?i)ks`, `a|b|`, `x{0,2}y`, `(?:ab)+c`, `^$`, `[^\n]+`, `\x{FFFD}`, `[\x{FFFC}-\x{FFFE}]`}
	for _, sh := range redact.Secrets.Shapes {
		out = append(out, sh.RE)
	}
	return out
}

// TestNeedsAreSound: a string an expression matches always passes its
// need, on strings built from the expressions' own literals and on
// strings that hold secrets.
func TestNeedsAreSound(t *testing.T) {
	t.Parallel()
	samples := []string{
		"", "plain text", "KELVIN", "\u212aelvin", "\u017fecret", "ſ", "AbC", "xy", "y", "ababc", "\xff", "\ufffd",
		"Authorization: Bearer abcdefgh12345678", "https://user:hunter22@example.com/x",
		"-----BEGIN RSA PRIVATE KEY-----\nMIIE", "mysql -psecret", "api_key=abcdef123456", "--token abcdef",
		"ghp_" + strings.Repeat("a", 36), "sk-" + strings.Repeat("b", 24), "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.abc",
		"AKIA" + strings.Repeat("X", 16), "?token=abc&x=1",
		"BASIC x", "ba\u017fic x", "BA\u017fIC  x", "A\u017fKABLE", "a\u212aable", "\u212a\u017f", "Ks", "-pa\u017f\u017f pass:x",
	}
	for _, e := range exprs() {
		re := regexp.MustCompile(e)
		n, err := regexneed.Of(e)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range samples {
			var lower string
			if re.MatchString(s) && !n.Maybe(s, &lower) {
				t.Errorf("%q matches %q but its need says no", e, s)
			}
		}
	}
}

// FuzzNeeds: no string an expression matches fails its need.
func FuzzNeeds(f *testing.F) {
	f.Add("Bearer abcdefgh12345678")
	f.Add("ſecret=xyz123")
	f.Add("password: \"hunter2\"")
	type pair struct {
		re   *regexp.Regexp
		need regexneed.Need
	}
	var ps []pair
	for _, e := range exprs() {
		n, err := regexneed.Of(e)
		if err != nil {
			f.Fatal(err)
		}
		ps = append(ps, pair{regexp.MustCompile(e), n})
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, p := range ps {
			var lower string
			if p.re.MatchString(s) && !p.need.Maybe(s, &lower) {
				t.Errorf("%q matches %q but its need says no", p.re, s)
			}
		}
	})
}

// TestNeedsSkipPlainText: the point of a need: on ordinary text most
// shapes are skipped without running.
func TestNeedsSkipPlainText(t *testing.T) {
	t.Parallel()
	skipped := 0
	for _, sh := range redact.Secrets.Shapes {
		n, _ := regexneed.Of(sh.RE)
		var lower string
		if !n.Maybe("/workspace/project1/src/file_1.go", &lower) {
			skipped++
		}
	}
	if skipped < len(redact.Secrets.Shapes)*3/4 {
		t.Errorf("only %d of %d shapes skipped on a path", skipped, len(redact.Secrets.Shapes))
	}
}

// TestFoldedNeedsSkipPlainText: a case-folded word with a k or an s still
// needs its other letters: a shape such as basic-auth, whose need was
// once only the whitespace after "basic", is skipped on plain words.
func TestFoldedNeedsSkipPlainText(t *testing.T) {
	t.Parallel()
	n, err := regexneed.Of(`(?i)\bbasic\s+([A-Za-z0-9+/]{8,}={0,2})`)
	if err != nil {
		t.Fatal(err)
	}
	var lower string
	if n.Maybe("alpha beta gamma delta epsilon zeta", &lower) {
		t.Errorf("the basic-auth shape runs on plain words")
	}
	lower = ""
	if !n.Maybe("Authorization: BASIC dXNlcjpwYXNz", &lower) {
		t.Errorf("the basic-auth shape is skipped on a basic credential")
	}
}
