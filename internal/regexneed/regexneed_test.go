package regexneed_test

import (
	"math/rand/v2"
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

// TestNeedsAreSoundGenerated: over generated expressions — literals,
// small classes, alternations the parser factors (ab|ac is a(?:b|c)),
// optional and repeated parts, assertions, case folding — and generated
// strings over the same few characters, no string an expression matches
// fails its need, and MaybeIn told the string's bytes answers what Maybe
// answers. The strings are short and the alphabet small, so many
// match.
func TestNeedsAreSoundGenerated(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(28, 3))
	atoms := []string{"a", "b", "ab", "ba", "_", "a", "b", "k", "K", "s", "[ab]", "[ab_]", "[^a]", `\b`, "^", "$", ".", `\s`, "é", "\u212a"}
	var gen func(depth int) string
	gen = func(depth int) string {
		if depth == 0 {
			return atoms[rng.IntN(len(atoms))]
		}
		switch rng.IntN(7) {
		case 0, 1:
			return gen(depth-1) + gen(depth-1)
		case 2:
			return "(?:" + gen(depth-1) + "|" + gen(depth-1) + ")"
		case 3:
			return "(?:" + gen(depth-1) + ")" + []string{"?", "*", "+", "{2}", "{1,3}", "{0,2}"}[rng.IntN(6)]
		case 4:
			return "(" + gen(depth-1) + ")"
		case 5:
			return "(?i:" + gen(depth-1) + ")"
		default:
			return gen(depth-1) + gen(depth-1) + "|" + gen(depth-1)
		}
	}
	common := []string{"a", "b", "_", " ", "k"}
	rare := []string{"A", "B", "K", "s", "S", "é", "\u212a", "\u017f", "\xff", "\n"}
	strs := make([]string, 600)
	for i := range strs {
		var b strings.Builder
		for range rng.IntN(11) {
			if rng.IntN(8) == 0 {
				b.WriteString(rare[rng.IntN(len(rare))])
			} else {
				b.WriteString(common[rng.IntN(len(common))])
			}
		}
		strs[i] = b.String()
	}
	// and expressions whose alternatives start one another
	fixed := []string{"(?:ab|a)_", "a(?:$|b)_", "(?:b|ba)(?:a|b)", "k(?:|a)b", `(?:a\b|ab)_`, "(?:_|_a)(?:b|a)_"}
	matched := 0
	for i := range 3000 + len(fixed) {
		var e string
		if i < len(fixed) {
			e = fixed[i]
		} else {
			e = gen(1 + rng.IntN(4))
		}
		re, err := regexp.Compile(e)
		if err != nil {
			continue
		}
		n, err := regexneed.Of(e)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range strs {
			var lower, lower2 string
			b := regexneed.BytesOf(s)
			maybe := n.Maybe(s, &lower)
			if n.MaybeIn(s, &lower2, &b) != maybe {
				t.Fatalf("%q on %q: MaybeIn is not Maybe (%v)", e, s, maybe)
			}
			if !re.MatchString(s) {
				continue
			}
			matched++
			if !maybe {
				t.Fatalf("%q matches %q but its need %v says no", e, s, n)
			}
		}
	}
	if matched < 10000 {
		t.Errorf("only %d matches: the generated cases test little", matched)
	}
}

// TestFactoredNeeds: an alternation the parser factors by its common
// prefix (gh[pousr]_…|github_pat_… is g(?:h…|ithub_pat_…)) needs its
// branches' whole prefixes, not the one letter they share: plain text
// with a g skips the github-token shape.
func TestFactoredNeeds(t *testing.T) {
	t.Parallel()
	for _, sh := range redact.Secrets.Shapes {
		if sh.Kind != "github-token" {
			continue
		}
		n, err := regexneed.Of(sh.RE)
		if err != nil {
			t.Fatal(err)
		}
		var lower string
		if n.Maybe("alpha beta gamma delta omega sigma", &lower) {
			t.Errorf("the github-token shape runs on plain words with a g: need %v", n)
		}
		for _, s := range []string{"ghp_" + strings.Repeat("a", 36), "x github_pat_" + strings.Repeat("b", 30)} {
			lower = ""
			if !n.Maybe(s, &lower) {
				t.Errorf("the github-token shape is skipped on %q", s)
			}
		}
	}
}
