package render

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Limits of what a rendering echoes from a call.
const (
	// MaxValueChars is the longest string value shown; a longer one is cut
	// to this many characters and followed by CutMarker with its full size.
	MaxValueChars = 200
	// MaxItems is the most elements of one array shown: a longer array shows
	// MaxItems-1 elements and one trailing string that counts the rest.
	MaxItems = 50
	// MaxKeyChars is the longest argument key echoed (SPEC §3).
	MaxKeyChars = 80
	// minScrubLen is the shortest secret searched for in free text: a
	// shorter key-named value is still replaced where it stands, but
	// replacing every "ab" in a message would garble it.
	minScrubLen = 4
)

// redactedMarker is what a secret is replaced with: what it looked like and
// how long it was, never any of its characters.
func redactedMarker(kind string, s string) string {
	return fmt.Sprintf("[REDACTED %s, %d chars]", kind, utf8.RuneCountInString(s))
}

// markerRE matches a whole redaction marker, so redacting twice changes
// nothing; cutRE matches the tail cut leaves.
var (
	markerRE = regexp.MustCompile(`^\[REDACTED [a-z -]+, \d+ chars\]$`)
	cutRE    = regexp.MustCompile(`…\[cut, \d+ chars in full\]$`)
)

// cut returns s cut to MaxValueChars characters with its full size shown.
// A string cut before is left as it is.
func cut(s string) (string, bool) {
	n := utf8.RuneCountInString(s)
	if n <= MaxValueChars {
		return s, false
	}
	if loc := cutRE.FindStringIndex(s); loc != nil && utf8.RuneCountInString(s[:loc[0]]) <= MaxValueChars {
		return s, false
	}
	i := 0
	for pos := range s {
		if i == MaxValueChars {
			return fmt.Sprintf("%s…[cut, %d chars in full]", s[:pos], n), true
		}
		i++
	}
	return s, false
}

// secretKeyParts are substrings of a normalised key name (lower case, only
// letters and digits) that mark its value as a secret.
var secretKeyParts = []string{
	"token", "password", "passwd", "passphrase", "secret", "apikey",
	"authorization", "credential", "privatekey", "cookie", "session",
	"accesskey", "signingkey", "encryptionkey", "masterkey", "bearer",
	"jwt", "signature", "connectionstring", "clientkey",
}

// secretKeyExact are whole normalised key names that mark a secret.
var secretKeyExact = map[string]bool{
	"auth": true, "pwd": true, "pass": true, "otp": true, "totp": true,
	"sig": true, "dsn": true, "pat": true, "key": false,
}

// tokenCounts are normalised names that contain "token" but count tokens,
// not hold one (SPEC §3's response-shaping max_tokens and its kin).
var tokenCounts = map[string]bool{
	"tokens": true, "maxtokens": true, "maxnewtokens": true, "maxoutputtokens": true,
	"maxinputtokens": true, "maxcompletiontokens": true, "numtokens": true,
	"totaltokens": true, "inputtokens": true, "outputtokens": true,
	"prompttokens": true, "completiontokens": true, "tokencount": true,
	"tokenlimit": true, "tokenizer": true, "tokensused": true, "maxtoken": true,
}

func notSecretKey(n string) bool { return tokenCounts[n] }

// SecretKey reports whether an argument named key holds a secret by its name
// alone: token, password, passwd, secret, api_key, authorization,
// credential, private_key, cookie, session and their kin, in any case and
// with any separators. Names that count tokens (max_tokens, total_tokens,
// tokenizer, …) are not secrets.
func SecretKey(key string) bool {
	var b strings.Builder
	for _, r := range strings.ToLower(key) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
		}
	}
	n := b.String()
	if n == "" || notSecretKey(n) {
		return false
	}
	if secretKeyExact[n] {
		return true
	}
	for _, p := range secretKeyParts {
		if strings.Contains(n, p) {
			return true
		}
	}
	return false
}

// shape is one recognised secret shape. When group > 0 only that submatch is
// replaced (the value of "password=…", not the name); name, when > 0, is a
// submatch that must itself be a secret key name.
type shape struct {
	kind  string
	re    *regexp.Regexp
	group int
	name  int
}

// shapes are applied in order; earlier, more specific shapes win.
var shapes = []shape{
	{kind: "private-key", re: regexp.MustCompile(`-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----(?s:.*?)(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|$)`)},
	{kind: "jwt", re: regexp.MustCompile(`\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*`)},
	{kind: "aws-access-key", re: regexp.MustCompile(`\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA|ABIA|ACCA)[A-Z0-9]{16}\b`)},
	{kind: "gcp-api-key", re: regexp.MustCompile(`\bAIza[0-9A-Za-z_-]{35}`)},
	{kind: "gcp-oauth-token", re: regexp.MustCompile(`\bya29\.[0-9A-Za-z_-]{20,}`)},
	{kind: "github-token", re: regexp.MustCompile(`\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,})`)},
	{kind: "gitlab-token", re: regexp.MustCompile(`\bglpat-[A-Za-z0-9_-]{20,}`)},
	{kind: "slack-token", re: regexp.MustCompile(`\bxox[abposre]-[A-Za-z0-9-]{10,}`)},
	{kind: "slack-webhook", re: regexp.MustCompile(`https://hooks\.slack\.com/services/[A-Za-z0-9/_-]+`)},
	{kind: "openai-key", re: regexp.MustCompile(`\bsk-(?:proj-|svcacct-|admin-|ant-[a-z0-9]+-)?[A-Za-z0-9_-]{20,}`)},
	{kind: "stripe-key", re: regexp.MustCompile(`\b[rsp]k_(?:live|test)_[0-9A-Za-z]{16,}`)},
	{kind: "npm-token", re: regexp.MustCompile(`\bnpm_[A-Za-z0-9]{36}`)},
	{kind: "huggingface-token", re: regexp.MustCompile(`\bhf_[A-Za-z0-9]{30,}`)},
	{kind: "bearer-token", re: regexp.MustCompile(`(?i)\bbearer\s+([A-Za-z0-9._~+/=-]{8,})`), group: 1},
	{kind: "basic-auth", re: regexp.MustCompile(`(?i)\bbasic\s+([A-Za-z0-9+/]{8,}={0,2})`), group: 1},
	{kind: "url-password", re: regexp.MustCompile(`(?i)\b[a-z][a-z0-9+.-]*://[^/\s:@]*:([^/\s@]+)@`), group: 1},
	{kind: "query-secret", re: regexp.MustCompile(`(?i)[?&]([a-z0-9_.-]+)=([^&\s#"']+)`), group: 2, name: 1},
	{kind: "assignment", re: regexp.MustCompile(`(?i)([a-z0-9_.-]+)["']?\s*[:=]\s*("[^"\n]*"|'[^'\n]*'|[^\s,;&"'}\]]+)`), group: 2, name: 1},
	{kind: "flag", re: regexp.MustCompile(`(?i)--?([a-z0-9_-]+)\s+("[^"\n]*"|'[^'\n]*'|[^\s"'-][^\s]*)`), group: 2, name: 1},
}

// isScheme reports whether v is an HTTP auth scheme word, which an
// assignment shape must not take for the secret.
func isScheme(v string) bool {
	switch strings.ToLower(strings.Trim(v, `"'`)) {
	case "bearer", "basic", "token", "digest":
		return true
	}
	return false
}

// runRE finds the runs of token characters the entropy test looks at.
var runRE = regexp.MustCompile(`[A-Za-z0-9+/=_-]{20,}`)

var uuidRE = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

// RedactString replaces every secret-shaped part of s — PEM private keys,
// JWTs, bearer and basic credentials, cloud and SaaS keys (AWS, GCP,
// GitHub, GitLab, Slack, OpenAI/Anthropic, Stripe, npm, Hugging Face),
// passwords in URLs, secret-named query parameters, assignments and flags
// (password=…, --token …), and long high-entropy strings — with a marker
// naming the shape and its length. It does not cut s.
func RedactString(s string) string {
	out, _ := redactShapes(s)
	return out
}

// redactShapes is RedactString that also reports whether anything changed.
func redactShapes(s string) (string, bool) {
	changed := false
	for _, sh := range shapes {
		if !sh.re.MatchString(s) {
			continue
		}
		var b strings.Builder
		last := 0
		for _, m := range sh.re.FindAllStringSubmatchIndex(s, -1) {
			start, end := m[0], m[1]
			if sh.group > 0 {
				start, end = m[2*sh.group], m[2*sh.group+1]
				if start < 0 {
					continue
				}
			}
			if sh.name > 0 && !SecretKey(s[m[2*sh.name]:m[2*sh.name+1]]) {
				continue
			}
			val := s[start:end]
			if sh.name > 0 && isScheme(val) {
				continue // "Authorization: Bearer …": the credential is its own shape
			}
			if strings.HasPrefix(val, "[REDACTED") {
				continue
			}
			b.WriteString(s[last:start])
			b.WriteString(redactedMarker(sh.kind, strings.Trim(val, `"'`)))
			last = end
			changed = true
		}
		b.WriteString(s[last:])
		s = b.String()
	}
	if runRE.MatchString(s) {
		s2 := runRE.ReplaceAllStringFunc(s, func(run string) string {
			if strings.HasPrefix(run, "/") || strings.HasPrefix(run, "~") {
				// A path: judge each segment on its own.
				segs := strings.Split(run, "/")
				for i, seg := range segs {
					if highEntropy(seg) {
						segs[i] = redactedMarker("high-entropy", seg)
					}
				}
				return strings.Join(segs, "/")
			}
			if highEntropy(run) {
				return redactedMarker("high-entropy", run)
			}
			return run
		})
		if s2 != s {
			s, changed = s2, true
		}
	}
	return s, changed
}

// highEntropy reports whether run looks like a random credential: at least
// 20 characters, letters and at least two digits, both cases (or 32+
// characters with digits making up 15%), not hex (digests, commit ids), not
// a UUID, and at least 3.5 bits of Shannon entropy per character.
func highEntropy(run string) bool {
	if len(run) < 20 || uuidRE.MatchString(run) {
		return false
	}
	var upper, lower, digit, hex int
	for _, r := range run {
		switch {
		case r >= 'A' && r <= 'Z':
			upper++
			if r <= 'F' {
				hex++
			}
		case r >= 'a' && r <= 'z':
			lower++
			if r <= 'f' {
				hex++
			}
		case r >= '0' && r <= '9':
			digit++
			hex++
		}
	}
	if hex == len(run) || digit < 2 || upper+lower == 0 {
		return false
	}
	mixed := upper >= 2 && lower >= 2
	dense := len(run) >= 32 && float64(digit) >= 0.15*float64(len(run))
	if !mixed && !dense {
		return false
	}
	return entropy(run) >= 3.5
}

// entropy is the Shannon entropy of s in bits per byte.
func entropy(s string) float64 {
	var freq [256]int
	for i := 0; i < len(s); i++ {
		freq[s[i]]++
	}
	h := 0.0
	n := float64(len(s))
	for _, c := range freq {
		if c == 0 {
			continue
		}
		p := float64(c) / n
		h -= p * math.Log2(p)
	}
	return h
}

// redactor redacts one tree of values and remembers what it found: the JSON
// Pointers it changed and the secrets it saw by key name, so the same
// secrets can be scrubbed from free text (messages) that echoes them.
type redactor struct {
	changed []string            // JSON Pointers of redacted or cut values
	secrets map[string]struct{} // whole values redacted by key name
}

func newRedactor() *redactor { return &redactor{secrets: map[string]struct{}{}} }

func (r *redactor) note(ptr string) { r.changed = append(r.changed, ptr) }

// value returns a redacted, cut deep copy of v found under key at ptr.
// A string or number under a secret key name is replaced whole, and so is
// every string and number inside an object or array under one; booleans and
// null stay.
func (r *redactor) value(ptr, key string, v any, secretParent bool) any {
	secret := secretParent || SecretKey(key)
	switch t := v.(type) {
	case string:
		if markerRE.MatchString(t) {
			return t
		}
		if secret && t != "" {
			r.secrets[t] = struct{}{}
			r.note(ptr)
			return redactedMarker("by key name", t)
		}
		out, red := redactShapes(t)
		out, cutOff := cut(out)
		if red || cutOff {
			r.note(ptr)
		}
		return out
	case map[string]any:
		m := make(map[string]any, len(t))
		for k, e := range t {
			kk := r.key(k)
			m[kk] = r.value(ptr+"/"+escapePointer(kk), k, e, secret)
		}
		return m
	case []any:
		n := len(t)
		if n > MaxItems {
			n = MaxItems - 1 // and one summary: cutting again changes nothing
		}
		out := make([]any, 0, n+1)
		for i := 0; i < n; i++ {
			out = append(out, r.value(ptr+"/"+strconv.Itoa(i), key, t[i], secret))
		}
		if len(t) > n {
			out = append(out, fmt.Sprintf("…[cut, %d more items, %d in full]", len(t)-n, len(t)))
			r.note(ptr)
		}
		return out
	case []string:
		a := make([]any, len(t))
		for i, s := range t {
			a[i] = s
		}
		return r.value(ptr, key, a, secretParent)
	case json.Number, float64, float32, int, int64, int32, uint, uint64, uint32:
		if secret {
			str := fmt.Sprint(t)
			r.secrets[str] = struct{}{}
			r.note(ptr)
			return redactedMarker("by key name", str)
		}
		return v
	case nil, bool:
		return v
	default:
		// Structs, typed slices and maps (a ledger entry in details): judge
		// them as the JSON they will be rendered as.
		b, err := json.Marshal(v)
		if err != nil {
			return fmt.Sprintf("[unrenderable %T]", v)
		}
		dec := json.NewDecoder(strings.NewReader(string(b)))
		dec.UseNumber()
		var x any
		if err := dec.Decode(&x); err != nil {
			return fmt.Sprintf("[unrenderable %T]", v)
		}
		return r.value(ptr, key, x, secretParent)
	}
}

// key returns an argument key as it may be echoed: secret-shaped keys are
// redacted and long keys cut to MaxKeyChars.
func (r *redactor) key(k string) string {
	out, _ := redactShapes(k)
	if utf8.RuneCountInString(out) > MaxKeyChars {
		n := 0
		for pos := range out {
			if n == MaxKeyChars {
				return fmt.Sprintf("%s…[cut, %d chars in full]", out[:pos], utf8.RuneCountInString(k))
			}
			n++
		}
	}
	return out
}

// text redacts free text: every secret seen by key name in this tree, then
// every secret shape; it is cut like a value only when cutLong is set.
func (r *redactor) text(s string) string {
	for _, sec := range r.sortedSecrets() {
		if len(sec) < minScrubLen {
			continue
		}
		marker := redactedMarker("by key name", sec)
		s = strings.ReplaceAll(s, sec, marker)
		if q := strconv.Quote(sec); len(q) > 2 && q[1:len(q)-1] != sec {
			s = strings.ReplaceAll(s, q[1:len(q)-1], marker)
		}
	}
	out, _ := redactShapes(s)
	return out
}

// sortedSecrets returns the secrets longest first, so a secret that contains
// another is replaced whole.
func (r *redactor) sortedSecrets() []string {
	out := make([]string, 0, len(r.secrets))
	for s := range r.secrets {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool {
		if len(out[i]) != len(out[j]) {
			return len(out[i]) > len(out[j])
		}
		return out[i] < out[j]
	})
	return out
}

// escapePointer escapes one JSON Pointer token (RFC 6901).
func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// lastToken returns the last token of a JSON Pointer, unescaped.
func lastToken(ptr string) string {
	i := strings.LastIndexByte(ptr, '/')
	if i < 0 {
		return ptr
	}
	return strings.ReplaceAll(strings.ReplaceAll(ptr[i+1:], "~1", "/"), "~0", "~")
}

// RedactArgs returns a deep copy of args as every rendering shows them:
// values under secret key names and secret-shaped strings replaced by a
// marker, long strings cut with their full size shown, long arrays cut,
// secret-shaped or long keys replaced. It also returns the JSON Pointers of
// the values it changed, sorted. args is not modified.
func RedactArgs(args map[string]any) (map[string]any, []string) {
	r := newRedactor()
	out, _ := r.value("", "", map[string]any(args), false).(map[string]any)
	if out == nil {
		out = map[string]any{}
	}
	sort.Strings(r.changed)
	return out, r.changed
}
