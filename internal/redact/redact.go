package redact

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/mcpx/mcpx-policy/internal/jsonptr"
	"github.com/mcpx/mcpx-policy/internal/regexneed"
)

// Limits of what a rendering echoes from a call.
const (
	// MaxValueChars is the longest string value shown; a longer one is cut
	// to this many characters and followed by CutMarker with its full size.
	MaxValueChars = 200
	// MaxItems is the most elements of one array shown: a longer array shows
	// MaxItems-1 elements and one trailing string that counts the rest.
	MaxItems = 50
	// MaxKeyChars is the longest argument key echoed.
	MaxKeyChars = 80
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

// SecretKey reports whether an argument named key holds a secret by its name
// alone (Secrets.KeyParts, Secrets.KeyExact): token, password, passwd,
// secret, api_key, authorization, credential, private_key, cookie, session
// and their kin, in any case and with any separators. Names that count
// tokens (Secrets.KeyCounts: max_tokens, total_tokens, tokenizer, …) are
// not secrets.
func SecretKey(key string) bool {
	var buf [64]byte
	n, ok := asciiNormal(buf[:0], key)
	if !ok || reference.Load() {
		return secretName(normalise(key))
	}
	// the byte form of secretName: a map indexed by string(n) and
	// bytes.Contains copy nothing
	t := table()
	if len(n) == 0 || t.counts[string(n)] {
		return false
	}
	if t.exact[string(n)] {
		return true
	}
	for _, p := range t.partBytes {
		if bytes.Contains(n, p) {
			return true
		}
	}
	return false
}

// secretName reports whether the normalised key name n names a secret.
func secretName(n string) bool {
	if n == "" || table().counts[n] {
		return false
	}
	if table().exact[n] {
		return true
	}
	for _, p := range table().parts {
		if strings.Contains(n, p) {
			return true
		}
	}
	return false
}

// asciiNormal appends to buf the normalised form of an ASCII key
// (normalise: lower case, letters and digits only); ok is false when key
// is not ASCII (its lower case is Unicode's: the Kelvin sign is a k).
func asciiNormal(buf []byte, key string) (n []byte, ok bool) {
	for i := 0; i < len(key); i++ {
		switch c := key[i]; {
		case c >= utf8.RuneSelf:
			return nil, false
		case 'A' <= c && c <= 'Z':
			buf = append(buf, c+'a'-'A')
		case 'a' <= c && c <= 'z', '0' <= c && c <= '9':
			buf = append(buf, c)
		}
	}
	return buf, true
}

// RedactString replaces every secret-shaped part of s (Secrets.Shapes and
// Secrets.Entropy) — PEM and PGP private keys, JWTs, bearer and basic
// credentials, cloud and SaaS keys (AWS, GCP, GitHub, GitLab, Slack,
// OpenAI/Anthropic, Stripe, npm, Hugging Face), passwords in URLs and glued
// to known password flags (mysql -pPASS), secret-named query parameters,
// assignments (also inside JSON text, escaped or not) and flags
// (password=…, "token": "…", --token …), and long high-entropy strings —
// with a marker naming the shape and its length. Every occurrence of a
// found secret is replaced, not only the one that matched. It does not
// cut s.
func RedactString(s string) string {
	out, _ := redactText(s, nil)
	return out
}

// hit is how a secret was found: the table entry's kind and rank (its index
// in the table; -1 for a secret known by key name). A lower rank names it.
type hit struct {
	kind string
	rank int
}

// redactText replaces in s every occurrence of each secret of known (text
// → kind, secrets seen elsewhere) and of each secret the table finds in s.
// It returns the result and what it found in s itself (text → kind).
func redactText(s string, known map[string]string) (string, map[string]string) {
	return redactTextCtx(s, known, nil, true, nil)
}

// redactTextCtx is redactText that also replaces every occurrence in s of
// each text of extra: secrets found around s (the command line an
// argument vector makes, the JSON text s holds), named by their hit. When
// pathSegments is false, a random-looking segment of a path is kept (a
// recording keeps what a replay judges a path by). m (nil: none) keeps
// the escapings of known's secrets.
func redactTextCtx(s string, known map[string]string, extra map[string]hit, pathSegments bool, m *memo) (string, map[string]string) {
	hits := map[string]hit{}
	add := func(text string, h hit) {
		if text == "" {
			return
		}
		if old, ok := hits[text]; !ok || h.rank < old.rank {
			hits[text] = h
		}
	}
	for sec, kind := range known {
		if len(sec) < Secrets.MinScrub {
			continue
		}
		for _, v := range m.escapings(sec) {
			if strings.Contains(s, v) {
				add(v, hit{kind, -1})
			}
		}
	}
	found := shapeSecrets(s)
	for text, h := range extra {
		if old, ok := found[text]; text != "" && (!ok || h.rank < old.rank) && strings.Contains(s, text) {
			found[text] = h
		}
	}
	for text, h := range found {
		add(text, h)
	}
	// Random-looking runs are judged with the shapes' finds masked, so a
	// run is never a shape's secret plus its surroundings.
	masked := apply(s, hits)
	for _, run := range runs(masked) {
		if strings.HasPrefix(run, "/") || strings.HasPrefix(run, "~") {
			// A path: judge each segment on its own.
			if !pathSegments {
				continue
			}
			for _, seg := range strings.Split(run, "/") {
				if highEntropy(seg) {
					add(seg, hit{"high-entropy", len(table().shapes)})
					found[seg] = hit{"high-entropy", len(table().shapes)}
				}
			}
			continue
		}
		if highEntropy(run) {
			add(run, hit{"high-entropy", len(table().shapes)})
			found[run] = hit{"high-entropy", len(table().shapes)}
		}
	}
	out := map[string]string{}
	for text, h := range found {
		out[text] = h.kind
	}
	return apply(s, hits), out
}

// shapeSecrets is what each shape finds in s, every shape on s as given.
func shapeSecrets(s string) map[string]hit {
	out := map[string]hit{}
	var lower string
	ref := reference.Load()
	bytes := regexneed.BytesOf(s) // read once for every shape's need
	for rank, sh := range table().shapes {
		if (!ref && !sh.need.MaybeIn(s, &lower, &bytes)) || !sh.re.MatchString(s) {
			continue
		}
		for _, m := range sh.re.FindAllStringSubmatchIndex(s, -1) {
			start, end := m[2*sh.Group], m[2*sh.Group+1]
			if start < 0 || start == end {
				continue
			}
			val := s[start:end]
			if sh.Name > 0 {
				if m[2*sh.Name] < 0 || !SecretKey(s[m[2*sh.Name]:m[2*sh.Name+1]]) {
					continue
				}
				if table().schemes[strings.ToLower(strings.Trim(val, Secrets.Trim))] {
					continue // "Authorization: Bearer …": the credential is its own shape
				}
			}
			if strings.HasPrefix(val, "[REDACTED") {
				continue
			}
			if _, ok := out[val]; !ok {
				out[val] = hit{sh.Kind, rank}
			}
		}
	}
	return out
}

// escapings are the forms a secret takes in text: as is, and inside a JSON
// or Go string literal.
func escapings(sec string) []string {
	out := []string{sec}
	add := func(q string) {
		if len(q) >= 2 {
			if in := q[1 : len(q)-1]; in != sec && !slices.Contains(out, in) {
				out = append(out, in)
			}
		}
	}
	add(strconv.Quote(sec))
	if b, err := json.Marshal(sec); err == nil {
		add(string(b))
	}
	var buf strings.Builder
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if enc.Encode(sec) == nil {
		add(strings.TrimSuffix(buf.String(), "\n"))
	}
	return out
}

// apply replaces every occurrence of every text of hits in s by a marker.
// Occurrences that overlap or touch are one marker, named by the first
// (and, at the same place, the lowest-ranked) of them.
func apply(s string, hits map[string]hit) string {
	type span struct {
		start, end int
		hit
	}
	var spans []span
	for text, h := range hits {
		for off := 0; ; {
			i := strings.Index(s[off:], text)
			if i < 0 {
				break
			}
			spans = append(spans, span{off + i, off + i + len(text), h})
			_, size := utf8.DecodeRuneInString(s[off+i:])
			off += i + size
		}
	}
	if len(spans) == 0 {
		return s
	}
	sort.Slice(spans, func(i, j int) bool {
		if spans[i].start != spans[j].start {
			return spans[i].start < spans[j].start
		}
		if spans[i].rank != spans[j].rank {
			return spans[i].rank < spans[j].rank
		}
		return spans[i].kind < spans[j].kind
	})
	var b strings.Builder
	last := 0
	for i := 0; i < len(spans); {
		cur := spans[i]
		for i++; i < len(spans) && spans[i].start <= cur.end; i++ {
			cur.end = max(cur.end, spans[i].end)
		}
		b.WriteString(s[last:cur.start])
		b.WriteString(redactedMarker(cur.kind, strings.Trim(s[cur.start:cur.end], Secrets.Trim)))
		last = cur.end
	}
	b.WriteString(s[last:])
	return b.String()
}

// highEntropy reports whether run looks like a random credential
// (Secrets.Entropy): at least 20 characters, letters and at least two
// digits, both cases (or 32+ characters with digits making up 15%), not hex
// (digests, commit ids), not a UUID, and at least 3.5 bits of Shannon
// entropy per character.
func highEntropy(run string) bool {
	e := Secrets.Entropy
	if len(run) < e.MinRun || table().uuid.MatchString(run) || table().hex.MatchString(run) {
		return false
	}
	var upper, lower, digit int
	for _, r := range run {
		switch {
		case r >= 'A' && r <= 'Z':
			upper++
		case r >= 'a' && r <= 'z':
			lower++
		case r >= '0' && r <= '9':
			digit++
		}
	}
	if digit < e.MinDigits || upper+lower == 0 {
		return false
	}
	mixed := upper >= 2 && lower >= 2
	dense := len(run) >= e.DenseRun && float64(digit) >= e.DenseDigits*float64(len(run))
	if !mixed && !dense {
		return false
	}
	return entropy(run) >= e.Bits
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
// Pointers it changed and the secrets it saw — whole values by key name and
// the parts of strings the table found — so the same secrets can be
// scrubbed from free text (messages) that echoes them, raw or escaped.
type redactor struct {
	changed []string          // JSON Pointers of redacted or cut values
	secrets map[string]string // secret text → what it was found as
	named   map[string]bool   // JSON Pointers of values hidden whole by a name (their key's or one beside them)
	full    bool              // nothing is cut (a prompt shows every byte)
	depth   int               // how deep in JSON text inside strings this tree is
	whole   string            // when set, what a value hidden by a name is replaced with, whole
	// everyItem walks every element of a long array, which is cut
	// otherwise (unless full): the walk that learns the secrets a
	// reason may echo.
	everyItem bool
	// keepPaths keeps the random-looking segments of a path in argument
	// strings: a recording, whose replay judges paths as they were.
	keepPaths bool
	// m is what this redaction found in each string it searched, shared
	// with the redactors it starts (JSON text in a string, a value hidden
	// by a name); nil: none (a redaction that reads each string once).
	m *memo
}

func newRedactor() *redactor {
	return &redactor{secrets: map[string]string{}, named: map[string]bool{}}
}

func (r *redactor) note(ptr string) { r.changed = append(r.changed, ptr) }

// learn remembers the secrets found in one string.
func (r *redactor) learn(found map[string]string) {
	for text, kind := range found {
		r.know(text, kind)
	}
}

// know remembers text as a secret found as kind. A text found as two
// kinds is named by one whatever the order the tree was walked in (its
// objects' members come in map order): by key name when it was found so,
// else by the kind that sorts first.
func (r *redactor) know(text, kind string) {
	if old, ok := r.secrets[text]; ok && kind != byKeyName && (old == byKeyName || old <= kind) {
		return
	}
	r.secrets[text] = kind
}

// byKeyName is the kind of a secret known by its key's name (or a name
// beside it).
const byKeyName = "by key name"

// value returns a redacted, cut deep copy of v found under key at ptr.
// A string or number under a secret key name is replaced whole, and so is
// every string and number inside an object or array under one; booleans and
// null stay. Strings are redacted whole before they are cut, so a secret
// across the cut is never half-shown.
func (r *redactor) value(ptr, key string, v any, secretParent bool) any {
	secret := secretParent || SecretKey(key)
	if secret && !secretParent {
		if out, ok := r.name(ptr, v); ok {
			return out
		}
	}
	switch t := v.(type) {
	case string:
		return r.str(ptr, t, secret, nil)
	case map[string]any:
		return r.object(ptr, t, secret)
	case []any:
		return r.array(ptr, key, t, secret, nil)
	case []string:
		a := make([]any, len(t))
		for i, s := range t {
			a[i] = s
		}
		return r.value(ptr, key, a, secretParent)
	case json.Number, float64, float32, int, int64, int32, uint, uint64, uint32:
		if secret {
			str := fmt.Sprint(t)
			r.secrets[str] = "by key name"
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

// str returns string s found at ptr as it may be shown: whole as a marker
// when secret (by a name), else with its secret-shaped parts, the texts
// of extra (secrets found around it) and the secrets of the JSON text it
// holds replaced, then cut (unless r.full). Strings are redacted whole
// before they are cut, so a secret across the cut is never half-shown.
func (r *redactor) str(ptr, s string, secret bool, extra map[string]hit) string {
	if markerRE.MatchString(s) {
		return s
	}
	if secret && s != "" {
		r.secrets[s] = "by key name"
		r.note(ptr)
		return redactedMarker("by key name", s)
	}
	if sub := r.jsonFinds(s); sub != nil {
		if extra == nil {
			extra = sub
		} else {
			for text, h := range sub {
				extra[text] = h
			}
		}
	}
	out, found := r.m.search(s, nil, extra, !r.keepPaths)
	r.learn(found)
	cutOff := false
	if !r.full {
		out, cutOff = cut(out)
	}
	if out != s || cutOff {
		r.note(ptr)
	}
	return out
}

// key returns an argument key as it may be echoed: its secret-shaped parts
// redacted, then cut to MaxKeyChars.
func (r *redactor) key(k string) string {
	out, found := r.m.search(k, nil, nil, true)
	r.learn(found)
	if !r.full && utf8.RuneCountInString(out) > MaxKeyChars {
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

// pointer returns a JSON Pointer as it may be echoed: each of its keys as
// key shows it.
func (r *redactor) pointer(ptr string) string {
	if ptr == "" || !strings.HasPrefix(ptr, "/") {
		return r.text(ptr)
	}
	toks := strings.Split(ptr[1:], "/")
	for i, t := range toks {
		raw := jsonptr.Unescape(t)
		if k := r.key(raw); k != raw {
			toks[i] = escapePointer(k)
		}
	}
	return "/" + strings.Join(toks, "/")
}

// text redacts free text: every secret seen in this tree (raw or escaped as
// in a JSON string), then every secret shape. It does not cut.
func (r *redactor) text(s string) string {
	out, _ := r.m.search(s, r.secrets, nil, true)
	return out
}

// escapePointer escapes one JSON Pointer token (RFC 6901).
func escapePointer(s string) string { return jsonptr.Escape(s) }

// lastToken returns the last token of a JSON Pointer, unescaped.
func lastToken(ptr string) string { return jsonptr.Last(ptr) }

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
