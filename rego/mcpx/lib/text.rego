# METADATA
# title: Text helpers
# description: |
#   Quoting, cutting and redaction of values echoed in messages, and the
#   nearest-key suggestion. Values that came from the caller are always
#   passed through show() before they reach a message or a violation.
package mcpx.lib.text

# max_value_chars is the longest string value echoed whole.
max_value_chars := 120

# cut returns s, or its first n characters and an ellipsis.
cut(s, n) := s if count(s) <= n

cut(s, n) := sprintf("%s…", [substring(s, 0, n)]) if count(s) > n

# quote renders s as a JSON string, cut to n characters.
quote(s, n) := json.marshal(cut(s, n))

# show returns the value to echo for an argument at key: secret-shaped values
# are redacted, long strings and large composites are cut with their size.
show(key, v) := "[redacted]" if secret(key, v)

show(key, v) := v if {
	not secret(key, v)
	not is_string(v)
	count(json.marshal(v)) <= max_value_chars
}

show(key, v) := sprintf("%s… (%d bytes)", [substring(json.marshal(v), 0, max_value_chars), count(json.marshal(v))]) if {
	not secret(key, v)
	not is_string(v)
	count(json.marshal(v)) > max_value_chars
}

show(key, v) := v if {
	not secret(key, v)
	is_string(v)
	count(v) <= max_value_chars
}

show(key, v) := sprintf("%s… (%d characters)", [substring(v, 0, max_value_chars), count(v)]) if {
	not secret(key, v)
	is_string(v)
	count(v) > max_value_chars
}

_secret_key := `(?i)(pass(word|wd|phrase)?|secret|token|api[_-]?key|apikey|auth(orization)?|credential|private[_-]?key|cookie|session[_-]?id|client[_-]?secret)`

_secret_value := `(?i)^(bearer\s+\S{8,}|basic\s+[a-z0-9+/=]{8,})$|-----BEGIN [A-Z ]*PRIVATE KEY-----|^eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*$|^(AKIA|ASIA)[A-Z0-9]{16}$|^gh[pousr]_[A-Za-z0-9]{30,}$|^github_pat_[A-Za-z0-9_]{30,}$|^xox[abprs]-[A-Za-z0-9-]{10,}$|^sk-[A-Za-z0-9_-]{20,}$|^AIza[0-9A-Za-z_-]{35}$`

# secret is true when the key names a secret or the value looks like one.
secret(key, _) if {
	is_string(key)
	regex.match(_secret_key, key)
}

secret(_, v) if {
	is_string(v)
	regex.match(_secret_value, v)
}

# list renders at most n quoted names of at most 80 characters, then how many
# more there were.
list(names, n) := concat(", ", [quote(s, 80) | some s in names]) if count(names) <= n

list(names, n) := sprintf("%s and %d more", [
	concat(", ", [quote(names[i], 80) | some i in numbers.range(0, n - 1)]),
	count(names) - n,
]) if count(names) > n

# nearest returns the candidate most like key, or "" when none is at least
# half alike. Likeness is the Dice coefficient over character bigrams of the
# lowercased, space-padded names, raised to 0.9 for an anagram (a swapped
# pair of letters, "tial" for "tail"). Ties go to the first in sort order.
nearest(key, candidates) := best if {
	k := _shape(key)
	scored := [[0 - l, c] | some c in candidates; l := _likeness(k, _candidate(c)); l >= 0.5]
	count(scored) > 0
	best := sort(scored)[0][1]
} else := ""

# _shape is what likeness compares of a name: its bigrams and its letters.
_shape(s) := {
	"bigrams": {substring(p, i, 2) | some i in numbers.range(0, count(p) - 2)},
	"letters": sort(split(lower(s), "")),
} if {
	p := sprintf(" %s ", [lower(s)])
}

# METADATA
# description: |
#   A candidate's shape. Candidates are the names a tool's inputSchema
#   declares, so the embedded engine keeps their shapes (ADR 0005); the
#   caller's unknown keys are shaped per call and never kept.
# custom:
#   memo: true
_candidate(s) := _shape(s)

_likeness(a, b) := max([
	(2 * count(a.bigrams & b.bigrams)) / (count(a.bigrams) + count(b.bigrams)),
	0.9 * to_number(a.letters == b.letters),
])

# pointer renders a key path as a JSON Pointer.
pointer(path) := concat("", [sprintf("/%s", [_escape(seg)]) | some seg in path])

# Most keys need no escaping; replace builds a replacer on every call, so
# it runs only when the key holds "~" or "/".
_escape(seg) := seg if {
	is_string(seg)
	not contains(seg, "~")
	not contains(seg, "/")
}

_escape(seg) := replace(replace(seg, "~", "~0"), "/", "~1") if {
	is_string(seg)
	_needs_escape(seg)
}

_needs_escape(seg) if contains(seg, "~")

_needs_escape(seg) if contains(seg, "/")

_escape(seg) := format_int(seg, 10) if is_number(seg)
