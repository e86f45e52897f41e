package redact_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/mcpx/mcpx-policy/internal/redact"
)

// TestFlagStartsAToken: a secret-named flag's value is redacted wherever a
// flag can stand (the start, after a space, a quote, a bracket, =), and a
// hyphenated word that merely ends in a secret name ("notes-per-session
// allows", an operator's budget id in a message) is prose, left as it is.
// Over generated names, words and separators.
func TestFlagStartsAToken(t *testing.T) {
	names := []string{"password", "token", "secret", "api-key", "session", "private-key", "client-secret"}
	words := []string{"allows", "writes", "notes", "is", "spent"}
	rng := rand.New(rand.NewPCG(5, 8))
	for i := range 500 {
		name := names[rng.IntN(len(names))]
		word := words[rng.IntN(len(words))]
		if !redact.SecretKey(name) {
			t.Fatalf("%q is not a secret name: the test needs names the table knows", name)
		}
		prefix := []string{"notes-per", "x", "ci9", "team_a-", "a-b-c"}[rng.IntN(5)]
		prose := fmt.Sprintf("budget %s-%s %s: 3 of 3", prefix, name, word)
		if got := redact.RedactString(prose); got != prose {
			t.Fatalf("case %d: prose %q became %q", i, prose, got)
		}
		value := fmt.Sprintf("v%dAlue", rng.IntN(1000))
		before := []string{"", "deploy ", "run\t", `"`, "[", "(", "=", ",", "x; "}[rng.IntN(9)]
		dashes := []string{"-", "--"}[rng.IntN(2)]
		flag := fmt.Sprintf("%s%s%s %s and more", before, dashes, name, value)
		if got := redact.RedactString(flag); strings.Contains(got, value) {
			t.Fatalf("case %d: flag %q kept its value: %q", i, flag, got)
		}
	}
}

// TestEscapedLineBreakIsNoValue: in JSON text quoted in a message (a
// violation shows a string argument so), a secret name followed by an
// escaped line break has no value on its line: the text keeps every
// character. A value on the line is still redacted (with what follows it
// up to a space: in plain text a backslash may be the value's own).
func TestEscapedLineBreakIsNoValue(t *testing.T) {
	for _, name := range []string{"password", "X-Api-Key", "token", "client_secret"} {
		for _, esc := range []string{`\n`, `\r\n`, `\t`} {
			text := fmt.Sprintf(`/c010/config "db:%s  host: db.internal%s  %s:%s  port: 5432%s" is not of type number`, esc, esc, name, esc, esc)
			if got := redact.RedactString(text); got != text {
				t.Errorf("%q became %q", text, got)
			}
		}
		value := "v123Alue"
		text := fmt.Sprintf(`"db:\n  %s: %s\n  port: 5432\n"`, name, value)
		if got := redact.RedactString(text); strings.Contains(got, value) || !strings.Contains(got, `port: 5432\n`) {
			t.Errorf("%q became %q", text, got)
		}
	}
}
