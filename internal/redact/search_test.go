package redact

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/mcpx/mcpx-policy/decision"
	"github.com/mcpx/mcpx-policy/internal/sweep"
)

// fragments are what generated strings are made of: secrets of every
// shape and of none, the words and separators around them, JSON text,
// paths, random-looking runs, non-ASCII and invalid bytes.
var fragments = []string{
	"ghp_" + strings.Repeat("aB3", 12), "github_pat_" + strings.Repeat("x9Y_", 6), "gho_short", "glpat-" + strings.Repeat("k2", 11),
	"AKIAIOSFODNN7EXAMPLE", "ASIA" + strings.Repeat("Q7", 8), "AIza" + strings.Repeat("Sy9_", 9), "ya29." + strings.Repeat("a0-", 8),
	"xoxb-1234567890-abc", "https://hooks.slack.com/services/T0/B1/xyz", "sk-proj-" + strings.Repeat("Ab1", 8), "sk_live_" + strings.Repeat("4eC3", 5),
	"npm_" + strings.Repeat("a1B2", 9), "hf_" + strings.Repeat("Zz9", 11), "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.sig_-x",
	"-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA\n-----END RSA PRIVATE KEY-----", "-----BEGIN OPENSSH PRIVATE KEY-----\nb3Bl",
	"Bearer abcdefgh12345678", "Authorization: Basic dXNlcjpwYXNzd29yZA==", "authorization: Token tok123456", "bearer", "basic",
	"https://user:hunter22@example.com/x", "postgres://u:p4ss@db/x", "mysql -u root -pS3cret db", "sshpass -p pw1234 ssh h",
	"redis-cli -a r3dis", "docker login -u me -p dpass", "curl -u me:cpass http://x", "sqlcmd -S h -P sqlpw", "mongosh -p mpw",
	"openssl -passin pass:opw", "smbclient -U me%smbpw", "sqlplus scott/tiger@db", "machine h login me password npw",
	"me:dsnpw@tcp(db:3306)/x", "scott/tiger@//h:1521/s", "jdbc:oracle:thin:scott/tiger@h",
	"?token=qt123&x=1", "&api_key=ak123", "password=hunter2", "api_key: 'k3y'", `"token": "t0ken"`, `\"secret\": \"s3c\"`,
	"--password hunter3", "-token abc", "--session s1", "notes-per-session allows", "max_tokens: 100", "password:\n  blockpw",
	"password: |\n  line1\n  line2", `secret = "multi` + "\n" + `line"`,
	`{"password":"jpw1","name":"x"}`, `[{"name":"DB_PASSWORD","value":"dbv1"}]`, `["--token","arr1"]`, `"{\"token\":\"nested1\"}"`,
	"/workspace/project3/src/file_12.go", "/tmp/tmp.Xk29aB7qLm0pZ3wR8sT1", "~/.cache/Ab3dE5gH7jK9mN1pQ3sT",
	"Zq8Xw2Lp9Rt4Yv6Nb3Mc7Kd1", "0123456789abcdef0123456789abcdef", "123e4567-e89b-12d3-a456-426614174000",
	"alpha beta gamma", "omega sigma", "[REDACTED jwt, 40 chars]", "…[cut, 300 chars in full]",
	" ", " ", "\n", "\t", ":", "=", ";", ",", "&", "\"", "'", "/", "-", "--", "\\", "{", "}", "[", "]", "é", "\u212a", "\xff", "日本",
}

func genString(rng *rand.Rand) string {
	var b strings.Builder
	for range 1 + rng.IntN(8) {
		b.WriteString(fragments[rng.IntN(len(fragments))])
	}
	return b.String()
}

var genKeys = []string{"path", "content", "token", "password", "name", "value", "key", "args", "cmd", "env", "headers", "notes", "max_tokens", "api-key", "data", "x"}

func genValue(rng *rand.Rand, depth int) any {
	switch n := rng.IntN(10); {
	case depth > 2 || n < 5:
		return genString(rng)
	case n == 5:
		return json.Number(fmt.Sprint(rng.IntN(100000)))
	case n == 6:
		return rng.IntN(2) == 0
	case n == 7:
		a := make([]any, rng.IntN(5))
		for i := range a {
			a[i] = genValue(rng, depth+1)
		}
		if rng.IntN(10) == 0 {
			for range 60 {
				a = append(a, genString(rng))
			}
		}
		return a
	default:
		return genObject(rng, depth+1)
	}
}

func genObject(rng *rand.Rand, depth int) map[string]any {
	m := map[string]any{}
	for range rng.IntN(5) {
		k := genKeys[rng.IntN(len(genKeys))]
		if rng.IntN(8) == 0 {
			k = genString(rng)
		}
		m[k] = genValue(rng, depth)
	}
	return m
}

// genDecision is a refusal or an ask of args whose reasons echo them:
// violations at their keys, messages and details quoting their strings.
func genDecision(rng *rand.Rand, args map[string]any) decision.Decision {
	d := decision.Decision{Outcome: decision.Deny}
	if rng.IntN(3) == 0 {
		d.Outcome = decision.Ask
	}
	var strs []string
	for _, v := range args {
		if s, ok := v.(string); ok {
			strs = append(strs, s)
		}
	}
	pick := func() string {
		if len(strs) == 0 || rng.IntN(3) == 0 {
			return genString(rng)
		}
		return strs[rng.IntN(len(strs))]
	}
	for range 1 + rng.IntN(3) {
		rs := decision.Reason{Code: decision.ArgumentRuleViolation, Message: "argument " + pick() + " breaks a rule: " + pick()}
		for k, v := range args {
			if rng.IntN(2) == 0 {
				rs.Violations = append(rs.Violations, decision.Violation{Path: "/" + k, Value: v, Constraint: "pattern",
					Expected: pick(), Detail: "got " + pick(), Rule: decision.RuleRef{ID: "r1", Description: pick()}})
			}
		}
		if rng.IntN(2) == 0 {
			rs.Details = map[string]any{"argument": pick(), "value": genValue(rng, 1)}
		}
		d.Reasons = append(d.Reasons, rs)
	}
	if rng.IntN(4) == 0 {
		d.Warnings = []decision.Reason{{Code: decision.UnknownArguments, Message: "unknown " + pick()}}
	}
	return d
}

// both returns f's result with the fast search and with the reference
// one.
func both[T any](f func() T) (fast, ref T) {
	fast = f()
	reference.Store(true)
	defer reference.Store(false)
	return fast, f()
}

// TestFastSearchIsTheReference: over generated strings, argument trees
// and decisions that echo them, every redaction — of a string, of the
// arguments as each output shows them, of a decision, of an ask's
// arguments through the redacted decision (Shown), of another decision
// on the same call (Again) — is the same, byte for byte, with the fast
// search (needs, the run scanner, the memo, key names as bytes) as with
// the reference (every shape's regular expression on every string, each
// time). Not parallel: it switches the package's search. A full run
// checks 2,000 decisions rather than 60.
func TestFastSearchIsTheReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(28, 1))
	for i := range 1000 {
		s := genString(rng)
		if fast, ref := both(func() string { return RedactString(s) }); fast != ref {
			t.Fatalf("string %d %q: fast %q, reference %q", i, s, fast, ref)
		}
	}
	type out struct {
		Args, Shown, Replaced, ShownOf any
		Changed                        [3][]string
		Decision, Again                decision.Decision
	}
	n := 60 // a full run (sweep.Full) checks 2,000
	if sweep.Full() {
		n = 2000
	}
	for i := range n {
		args := genObject(rng, 0)
		d, d2 := genDecision(rng, args), genDecision(rng, args)
		f := func() out {
			var o out
			o.Args, o.Changed[0] = RedactArgs(args)
			o.Shown, o.Changed[1] = RedactShown(args)
			o.Replaced, o.Changed[2] = RedactReplacing(args, "[REDACTED]")
			r := Of(d, args)
			o.Decision = r.Doc()
			o.ShownOf, _ = r.Shown(args)
			o.Again = r.Again(d2, args).Doc()
			return o
		}
		fast, ref := both(f)
		if !reflect.DeepEqual(fast, ref) {
			fb, _ := json.MarshalIndent(fast, "", " ")
			rb, _ := json.MarshalIndent(ref, "", " ")
			t.Fatalf("case %d: fast and reference differ\nfast %s\nreference %s", i, fb, rb)
		}
		if !reflect.DeepEqual(fast.ShownOf, fast.Shown) {
			t.Fatalf("case %d: Shown through the decision is not RedactShown", i)
		}
	}
}

// TestRunScanIsTheRegex: the run scanner finds exactly what the table's
// run expression finds, on generated strings of the class's characters,
// others, non-ASCII and invalid bytes, with runs around the minimum
// length; and other forms of expression get no scanner.
func TestRunScanIsTheRegex(t *testing.T) {
	t.Parallel()
	rs := newRunScan(Secrets.Entropy.Run)
	if rs == nil {
		t.Fatalf("no scanner for %s", Secrets.Entropy.Run)
	}
	re := regexp.MustCompile(Secrets.Entropy.Run)
	rng := rand.New(rand.NewPCG(28, 2))
	parts := []string{"a", "Z", "9", "+", "/", "=", "_", "-", " ", ".", "é", "\xff", "\u212a", "\n", "~"}
	for i := range 20000 {
		var b strings.Builder
		for range rng.IntN(90) {
			if rng.IntN(4) == 0 {
				b.WriteString(parts[rng.IntN(len(parts))])
			} else {
				b.WriteString(parts[rng.IntN(7)])
			}
		}
		s := b.String()
		if got, want := rs.find(s), re.FindAllString(s, -1); !reflect.DeepEqual(got, want) {
			t.Fatalf("case %d %q: scanner %q, regex %q", i, s, got, want)
		}
	}
	for _, expr := range []string{`[a-z]{20,}?`, `[a-z]{2,5}`, `[a-zé]{3,}`, `x{3,}`, `[a-z]+`[:5] + `*`} {
		if newRunScan(expr) != nil {
			t.Errorf("%s got a scanner", expr)
		}
	}
}

// TestSecretKeyBytes: SecretKey and nameField read an ASCII key name
// byte by byte without copying it; they answer what the normalised name
// answers, over generated names made of the table's words in both cases,
// separators, digits and non-ASCII letters (the Kelvin sign is a k).
func TestSecretKeyBytes(t *testing.T) {
	t.Parallel()
	var words []string
	words = append(words, Secrets.KeyParts...)
	words = append(words, Secrets.KeyExact...)
	words = append(words, Secrets.KeyCounts...)
	words = append(words, Secrets.NameFields...)
	words = append(words, "x", "db", "max", "path", "_", "-", ".", " ", "9", "\u212a", "é", "\xff", strings.Repeat("a", 70))
	rng := rand.New(rand.NewPCG(28, 5))
	for i := range 20000 {
		var b strings.Builder
		for range 1 + rng.IntN(4) {
			w := words[rng.IntN(len(words))]
			if rng.IntN(3) == 0 {
				w = strings.ToUpper(w)
			}
			b.WriteString(w)
		}
		k := b.String()
		if got, want := SecretKey(k), secretName(normalise(k)); got != want {
			t.Fatalf("case %d: SecretKey(%q) = %v, the normalised name says %v", i, k, got, want)
		}
		if got, want := nameField(k), table().names[normalise(k)]; got != want {
			t.Fatalf("case %d: nameField(%q) = %v, the normalised name says %v", i, k, got, want)
		}
	}
}

// TestRedactIsDeterministic: the same decision of the same call is
// redacted the same way every time, the kind each marker names included
// (an ask's prompt and its approval's binding digest that text): a
// secret found as two kinds (scott/tiger is a password flag of sqlplus
// and a DSN's password) is named by the same one whatever the order the
// arguments' members are walked in. Over generated decisions.
func TestRedactIsDeterministic(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(28, 6))
	for i := range 250 {
		args := genObject(rng, 0)
		d := genDecision(rng, args)
		first := Redact(d, args)
		for range 3 {
			if again := Redact(d, args); !reflect.DeepEqual(first, again) {
				fb, _ := json.Marshal(first)
				ab, _ := json.Marshal(again)
				t.Fatalf("case %d: redacted differently\n%s\n%s", i, fb, ab)
			}
		}
	}
}
