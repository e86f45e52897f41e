package redact

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Redaction by structure: a value is a secret not only by its own key's
// name and by its shape, but by what is beside it (Secrets.NameFields,
// Secrets.PairKey), by the command line the strings of an array make, and
// by the JSON text a string holds. rego/mcpx/lib/text.rego applies the
// same rules from the same table().

// MaxJSONDepth is how many levels of JSON text inside strings are read as
// JSON: a string holding JSON text whose strings hold JSON text is read
// twice; deeper JSON text is searched by shape only.
const MaxJSONDepth = 2

// jsonStart matches the start of a string that may hold JSON text: an
// object, an array or a string (JSON text encoded twice) after JSON
// whitespace.
var jsonStart = regexp.MustCompile(`^[ \t\n\r]*[\[{"]`)

// normalise is a key name as the table compares it: lower case, letters
// and digits only.
func normalise(key string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(key) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// nameField reports whether an object member named k names the other
// members of its object (Secrets.NameFields).
func nameField(k string) bool {
	var buf [64]byte
	if n, ok := asciiNormal(buf[:0], k); ok && !reference.Load() {
		return table().names[string(n)]
	}
	return table().names[normalise(k)]
}

// valueField reports whether an object member named k holds the value a
// name field beside it names (Secrets.ValueFields, Secrets.ValueParts).
func valueField(k string) bool {
	n := normalise(k)
	if table().values[n] {
		return true
	}
	for _, p := range Secrets.ValueParts {
		if strings.Contains(n, p) {
			return true
		}
	}
	return false
}

// namesSecret reports whether object m names a secret in a name field:
// then its value fields are secrets by key name.
func namesSecret(m map[string]any) bool {
	for k, v := range m {
		if s, ok := v.(string); ok && nameField(k) && SecretKey(s) {
			return true
		}
	}
	return false
}

// pairNamed reports whether element i of a is named a secret by the
// element before it (Secrets.PairKey).
func pairNamed(a []any, i int) bool {
	if i == 0 {
		return false
	}
	s, ok := a[i-1].(string)
	return ok && table().pairKey.MatchString(s) && SecretKey(s)
}

// commandLine is the text the strings of array a make as one command line,
// after the strings beside it (the string members of the object that
// holds it, in key order): each a word (lineWord) joined by one space. It
// is "" when a has no word or fewer than two words take part, since one
// string is searched by itself.
func commandLine(beside map[string]any, a []any) string {
	var own []string
	for _, e := range a {
		if s, ok := e.(string); ok && lineWord(s) {
			own = append(own, s)
		}
	}
	if len(own) == 0 {
		return ""
	}
	var parts []string
	if beside != nil {
		keys := make([]string, 0, len(beside))
		for k, v := range beside {
			if s, ok := v.(string); ok && lineWord(s) {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			parts = append(parts, beside[k].(string))
		}
	}
	parts = append(parts, own...)
	if len(parts) < 2 {
		return ""
	}
	return strings.Join(parts, " ")
}

// lineWord reports whether s takes part in a command line: at most
// Secrets.LineWord characters and no line break.
func lineWord(s string) bool {
	return len(s) <= 4*Secrets.LineWord && utf8.RuneCountInString(s) <= Secrets.LineWord && !strings.Contains(s, "\n")
}

// commandFinds is what the table's shapes find in the command line of a
// (commandLine), or nil; m (nil: none) keeps it for the line. The map is
// read only.
func commandFinds(beside map[string]any, a []any, m *memo) map[string]hit {
	line := commandLine(beside, a)
	if line == "" {
		return nil
	}
	return m.line(line)
}

// object redacts object m found at ptr: a member is a secret by key name
// when its own key names one, when m is (secret), or when a name field of
// m names one and the member is a value field.
func (r *redactor) object(ptr string, m map[string]any, secret bool) any {
	named := !secret && namesSecret(m)
	out := make(map[string]any, len(m))
	for k, e := range m {
		kk := r.key(k)
		p := ptr + "/" + escapePointer(kk)
		child := secret
		if !child && (named && valueField(k) || SecretKey(k)) {
			if v, ok := r.name(p, e); ok {
				out[kk] = v
				continue
			}
			child = true
		}
		if a, ok := e.([]any); ok {
			out[kk] = r.array(p, k, a, child, m)
			continue
		}
		out[kk] = r.value(p, k, e, child)
	}
	return out
}

// array redacts array a found at ptr under key; beside is the object that
// holds it (nil for an array in an array or at the root). An element is a
// secret by key name when the array is (secret) or when the element before
// it names one (pairNamed); the secrets the array's command line holds are
// replaced in its strings. Unless r.full, a long array is cut.
func (r *redactor) array(ptr, key string, a []any, secret bool, beside map[string]any) any {
	n := len(a)
	if !r.full && !r.everyItem && n > MaxItems {
		n = MaxItems - 1 // and one summary: cutting again changes nothing
	}
	var extra map[string]hit
	if !secret {
		extra = commandFinds(beside, a, r.m)
	}
	out := make([]any, 0, n+1)
	for i := 0; i < n; i++ {
		p := ptr + "/" + strconv.Itoa(i)
		el := secret
		if !el && pairNamed(a, i) {
			if v, ok := r.name(p, a[i]); ok {
				out = append(out, v)
				continue
			}
			el = true
		}
		if s, ok := a[i].(string); ok && !el && extra != nil {
			out = append(out, r.str(p, s, false, copyHits(extra)))
			continue
		}
		out = append(out, r.value(p, key, a[i], el))
	}
	if len(a) > n {
		out = append(out, fmt.Sprintf("…[cut, %d more items, %d in full]", len(a)-n, len(a)))
		r.note(ptr)
	}
	return out
}

func copyHits(h map[string]hit) map[string]hit {
	out := make(map[string]hit, len(h))
	for k, v := range h {
		out[k] = v
	}
	return out
}

// jsonFinds reads string s as JSON text, when it holds some and this tree
// is less than MaxJSONDepth levels of JSON text deep: every secret found
// inside it — a value hidden by a name (its key's, one beside it), what
// the shapes find in its keys and strings and on its command lines, what
// its own JSON text hides — is a secret of s wherever it stands in s, raw
// or escaped as in JSON text (a shape searching s itself may miss it: the
// quoted value of an innocent key runs over it). Random-looking runs are
// judged in s. It returns those texts of s, or nil.
func (r *redactor) jsonFinds(s string) map[string]hit {
	if r.depth >= MaxJSONDepth || !jsonStart.MatchString(s) || !json.Valid([]byte(s)) {
		return nil
	}
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return nil
	}
	sub := &redactor{secrets: map[string]string{}, named: map[string]bool{}, full: true, depth: r.depth + 1, keepPaths: r.keepPaths, m: r.m}
	sub.value("", "", v, false)
	var out map[string]hit
	for text, kind := range sub.secrets {
		if kind == "high-entropy" {
			continue // the runs of s are judged in s itself
		}
		for _, e := range escapings(text) {
			if e != "" && strings.Contains(s, e) {
				if out == nil {
					out = map[string]hit{}
				}
				if old, ok := out[e]; !ok || old.kind > kind {
					out[e] = hit{kind, -1}
				}
			}
		}
	}
	return out
}

// RedactShown returns a deep copy of args as a prompt shows them: every
// secret replaced as RedactArgs replaces it, and nothing cut. It also
// returns the JSON Pointers of the values it changed, sorted.
func RedactShown(args map[string]any) (map[string]any, []string) {
	return newRedactor().shown(args)
}

// shown is RedactShown with the redactor r, new.
func (r *redactor) shown(args map[string]any) (map[string]any, []string) {
	r.full = true
	out, _ := r.value("", "", map[string]any(args), false).(map[string]any)
	if out == nil {
		out = map[string]any{}
	}
	sort.Strings(r.changed)
	return out, r.changed
}

// name notes that the value v at ptr is hidden whole by a name. With
// r.whole set it returns r.whole and true: v is replaced as it is, an
// object or array included, and its strings are remembered as secrets.
func (r *redactor) name(ptr string, v any) (any, bool) {
	r.named[ptr] = true
	if r.whole == "" {
		return nil, false
	}
	if v == nil {
		return v, true
	}
	if _, isBool := v.(bool); isBool {
		return v, true
	}
	sub := &redactor{secrets: map[string]string{}, named: map[string]bool{}, full: true, keepPaths: r.keepPaths, m: r.m}
	sub.value(ptr, "", v, true)
	for text, kind := range sub.secrets {
		r.know(text, kind)
	}
	r.note(ptr)
	return r.whole, true
}

// RedactReplacing is RedactShown but for the values hidden whole by a name
// (their key's, or one beside them): each is replaced by whole, whatever
// its type (null and booleans stay). A recording keeps the call's shape
// with it and says where it took values out. It keeps a random-looking
// segment of a path no shape names (a temporary directory, a content
// hash): a replay judges the path as it was, and a path rule would judge a
// marker otherwise.
func RedactReplacing(args map[string]any, whole string) (map[string]any, []string) {
	r := newRedactor()
	r.full = true
	r.keepPaths = true
	r.whole = whole
	out, _ := r.value("", "", map[string]any(args), false).(map[string]any)
	if out == nil {
		out = map[string]any{}
	}
	sort.Strings(r.changed)
	return out, r.changed
}

// namedAt reports whether the value at ptr (as r shows pointers) was
// hidden whole by a name in the tree r walked: ptr or one of its parents.
func (r *redactor) namedAt(ptr string) bool {
	for p := ptr; ; {
		if r.named[p] {
			return true
		}
		i := strings.LastIndexByte(p, '/')
		if i < 0 {
			return false
		}
		p = p[:i]
	}
}
