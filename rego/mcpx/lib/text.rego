# METADATA
# title: Text helpers
# description: |
#   Quoting, cutting and redaction of values echoed in messages, and the
#   nearest-key suggestion. Values that came from the caller are always
#   passed through show() before they reach a message or a violation.
package mcpx.lib.text

import data.mcpx.lib.predicates

# max_value_chars is the longest string value echoed whole.
max_value_chars := 120

# cut returns s, or its first n characters and an ellipsis.
cut(s, n) := s if count(s) <= n

cut(s, n) := sprintf("%s…", [substring(s, 0, n)]) if count(s) > n

# quote renders s as a JSON string, cut to n characters.
quote(s, n) := json.marshal(cut(s, n))

# METADATA
# description: |
#   show returns the value to echo for an argument at key: redacted first
#   (value), then, when long, cut with its full size. Redacting before
#   cutting means a secret across the cut is never half-shown.
show(key, v) := _cut(v, v) if {
	predicates.plain_value(key, v)
} else := _cut(value(key, v, set()), v)

# METADATA
# description: |
#   show_at is show for the value v found at JSON Pointer ptr of a call's
#   arguments args: a value a name hides — its key's or an ancestor's, or
#   one beside it or beside an ancestor (_names_child) — is hidden whole; a
#   string in an array, and the strings of an array, have the secrets of
#   the array's command line replaced. Only the ancestors of ptr are read,
#   with its digit tokens read as array indexes and, failing that, as keys;
#   with plain (lib.predicates.plain_args of args, asked once per call)
#   only their names are.
show_at(args, plain, ptr, key, v) := show(key, v) if {
	plain
	not contains(trim_prefix(ptr, "/"), "/") # one key: show judges it
} else := _cut(_hide(v), v) if {
	plain
	_named_above(ptr)
} else := show(key, v) if {
	plain
} else := _show_at(args, _readings(ptr), key, v)

# _named_above holds when a key of ptr above its last names a secret.
_named_above(ptr) if {
	parts := split(ptr, "/")
	count(parts) > 2
	some t in array.slice(parts, 1, count(parts) - 1)
	secret_key(unescape(t))
}

_show_at(args, readings, key, v) := _cut(_hide(v), v) if {
	some t in readings
	_named_at(args, t)
} else := _cut(_scrub(v, set(), f), v) if {
	is_string(v)
	f := _line_finds_at(args, readings, 1)
	count(f) > 0
} else := _cut(_tree_in(key, w, set(), _named_roots(w), object.union(_ctx_finds(w), {[]: f})), v) if {
	is_array(v)
	f := _line_finds_at(args, readings, 0)
	count(f) > 0
	w := _plain(v)
} else := show(key, v)

# _readings are the paths ptr names for object.get: its digit tokens as
# array indexes, then all its tokens as keys.
_readings(ptr) := [[_index(t) | some t in toks], toks] if {
	toks := [unescape(t) | some t in array.slice(split(ptr, "/"), 1, count(split(ptr, "/")))]
}

_index(t) := to_number(t) if regex.match(`^(0|[1-9][0-9]{0,8})$`, t)

else := t

_named_at(_, t) if {
	some seg in t
	is_string(seg)
	secret_key(seg)
}

_named_at(args, t) if {
	count(t) > 0
	some i in numbers.range(0, count(t) - 1)
	_names_child(object.get(args, array.slice(t, 0, i), null), t[i])
}

# _names_child holds when node names its child k a secret by structure
# (_named_roots): a name field of the object beside it, the element before
# it in the array.
_names_child(o, k) if {
	is_object(o)
	_value_field(k)
	_names_secret(o)
}

_names_child(a, i) if {
	is_array(a)
	is_number(i)
	i > 0
	_pair_key(a[i - 1])
}

# _line_finds_at is what the shapes find on the command line of the array
# `up` levels above the path (of readings) in args (text._ctx_finds), or [].
_line_finds_at(args, readings, up) := f if {
	some t in readings
	count(t) >= up
	at := array.slice(t, 0, count(t) - up)
	a := object.get(args, at, null)
	is_array(a)
	f := _line_finds(_line(_holder(args, at), a))
} else := []

# _line_finds is what the shapes find in a command line; a line with no
# secret-shaped part to look for (lib.predicates.plain_text, answered in
# Go by the embedded engine) is not searched.
_line_finds(line) := [] if predicates.plain_text(line)

else := _shape_finds(line)

# _holder is the object that holds the node at path t, or {}.
_holder(args, t) := o if {
	count(t) > 0
	is_string(t[count(t) - 1])
	o := object.get(args, array.slice(t, 0, count(t) - 1), null)
	is_object(o)
} else := {}

# _hide is v hidden whole, as under a secret key name.
_hide(v) := _by_name(v) if {
	_scalar(v)
} else := v if {
	not type_name(v) in {"object", "array", "set"}
} else := _tree_in("", _plain(v), set(), {[]}, {})

# echo is value(key, v, set()): v as it may be echoed when no other secret
# is known (lib.predicates.plain_value spares the walk when v is plain).
echo(key, v) := v if {
	predicates.plain_value(key, v)
} else := value(key, v, set())

# (Functions of several exclusive cases are else-chains in this file: OPA
# stops at the case that holds instead of trying every one.)
_cut(r, v) := r if {
	is_string(r)
	count(r) <= max_value_chars
} else := sprintf("%s… (%d characters)", [substring(r, 0, max_value_chars), count(v)]) if {
	is_string(r)
	is_string(v)
} else := sprintf("%s… (%d characters)", [substring(r, 0, max_value_chars), count(r)]) if {
	is_string(r)
} else := r if {
	count(json.marshal(r)) <= max_value_chars
} else := sprintf("%s… (%d bytes)", [substring(json.marshal(r), 0, max_value_chars), count(json.marshal(v))])

# METADATA
# description: |
#   value returns v, found under key, as it may be echoed: a string or
#   number under a secret key name (secret_key) is replaced whole, and so is
#   every string and number inside an object or array under one, under a
#   secret-named key inside it, or named a secret by structure (a name
#   field beside it, the element before it: _named_roots); every other
#   string has its secret-shaped parts, every text of known and what the
#   command line of its array holds (_ctx_finds) replaced (scrub), and so
#   has every key of an object. Booleans and null stay. Nothing is cut.
value(key, v, known) := _by_name(v) if {
	_scalar(v)
	secret_key(key)
} else := scrub(v, known) if {
	is_string(v)
} else := v if {
	type_name(v) in {"number", "boolean", "null"}
} else := _tree(key, _plain(v), known) if {
	type_name(v) in {"object", "array", "set"}
}

# _plain is v as JSON shows it: a set (an override may put one in its
# details) becomes an array, which json.patch can change.
_plain(v) := json.unmarshal(json.marshal(v)) if _has_set(v)

else := v

_has_set(v) if {
	walk(v, [_, x])
	is_set(x)
}

_scalar(v) if {
	type_name(v) in {"number", "string"}
	v != ""
}

_by_name(v) := _marker("by key name", v) if is_string(v)

else := _marker("by key name", json.marshal(v)) if is_number(v)

_marker(kind, s) := sprintf("[REDACTED %s, %d chars]", [kind, count(trim(s, _table.trim))]) if {
	_have_table
} else := sprintf("[REDACTED %s, %d chars]", [kind, count(s)])

# _tree replaces the strings and numbers of a composite one by one, then
# renames its secret-shaped keys, the deepest first (two keys redacted
# alike become one: the last moved wins).
_tree(key, v, known) := _tree_in(key, v, known, _named_roots(v), _ctx_finds(v))

_tree_in(key, v, known, roots, ctx) := json.patch(v, array.concat(
	[{"op": "replace", "path": p, "value": r} |
		walk(v, [p, x])
		count(p) > 0
		_scalar(x)
		r := _leaf(key, p, x, known, roots, ctx)
		r != x
	],
	[{"op": "move", "from": m[1], "path": m[2]} | some m in sort([[0 - count(p), p, array.concat(array.slice(p, 0, count(p) - 1), [rk])] |
		walk(v, [p, _])
		count(p) > 0
		k := p[count(p) - 1]
		is_string(k)
		_suspect(k)
		rk := redact(k)
		rk != k
	])],
))

_leaf(key, p, x, known, roots, ctx) := _by_name(x) if {
	_named_path(key, p, roots)
} else := _scrub(x, known, _ctx_at(ctx, p)) if {
	is_string(x)
} else := x if {
	is_number(x)
}

_named_path(key, _, _) if secret_key(key)

_named_path(_, p, _) if {
	some seg in p
	is_string(seg)
	secret_key(seg)
}

_named_path(_, p, roots) if {
	count(roots) > 0
	some i in numbers.range(0, count(p))
	array.slice(p, 0, i) in roots
}

# METADATA
# description: |
#   _named_roots are the paths in v of the values a name beside them
#   hides (Go: render's redact_structure.go): every value field (the
#   table's valueFields, and names containing one of its valueParts) of an
#   object whose name field (nameFields: name, key, header, …) holds a
#   secret key name ({"name": "DB_PASSWORD", "value": …}); and an array
#   element after a string that matches the table's pairKey and is a
#   secret key name ([["X-Api-Key", …]], ["--password", …]).
_named_roots(v) := {array.concat(p, [k]) |
	walk(v, [p, o])
	is_object(o)
	_names_secret(o)
	some k, _ in o
	_value_field(k)
} | {array.concat(p, [i]) |
	walk(v, [p, a])
	is_array(a)
	some i, _ in a
	i > 0
	_pair_key(a[i - 1])
}

_name_fields := {x | some x in _table.nameFields}

_value_fields := {x | some x in _table.valueFields}

_value_field(k) if {
	is_string(k)
	regex.replace(lower(k), `[^a-z0-9]`, "") in _value_fields
}

_value_field(k) if {
	is_string(k)
	n := regex.replace(lower(k), `[^a-z0-9]`, "")
	some part in _table.valueParts
	contains(n, part)
}

_name_field(k) if {
	is_string(k)
	regex.replace(lower(k), `[^a-z0-9]`, "") in _name_fields
}

_names_secret(o) if {
	some k, x in o
	_name_field(k)
	is_string(x)
	secret_key(x)
}

_pair_key(s) if {
	is_string(s)
	regex.match(_table.pairKey, s)
	secret_key(s)
}

# METADATA
# description: |
#   _ctx_finds maps the path of each array in v to what the table's
#   shapes find in the command line its strings make: the string members
#   of the object that holds it (in key order), then its own strings, each a
#   word (_word: short, one line), joined by single spaces, when it has a
#   word and at least two take part (["mysql", "-pPASS"],
#   {"command": "mysql", "args": ["-pPASS"]}). Those secrets are replaced
#   in the array's strings.
_ctx_finds(v) := object.union_n([
	{array.concat(p, [k]): f |
		walk(v, [p, o])
		is_object(o)
		some k, a in o
		is_array(a)
		f := _line_finds(_line(o, a))
		count(f) > 0
	},
	{array.concat(p, [i]): f |
		walk(v, [p, o])
		is_array(o)
		some i, a in o
		is_array(a)
		f := _line_finds(_line({}, a))
		count(f) > 0
	},
	{[]: f |
		is_array(v)
		f := _line_finds(_line({}, v))
		count(f) > 0
	},
])

_line(o, a) := concat(" ", parts) if {
	own := [x | some x in a; _word(x)]
	count(own) > 0
	parts := array.concat([o[k] | some k in sort([k | some k, x in o; _word(x)])], own)
	count(parts) > 1
} else := ""

# _word is a string that takes part in a command line: at most lineWord
# characters and no line break.
_word(x) if {
	is_string(x)
	count(x) <= _table.lineWord
	not contains(x, "\n")
}

_ctx_at(ctx, p) := f if {
	f := ctx[array.slice(p, 0, count(p) - 1)]
} else := []

# redact_key returns an argument key as it may be echoed: its
# secret-shaped parts redacted.
redact_key(k) := redact(k)

# redact_pointer returns a JSON Pointer as it may be echoed: each key as
# redact_key shows it.
redact_pointer(ptr) := concat("/", [_token(t) | some t in split(ptr, "/")]) if _suspect(ptr)

else := ptr

_token(t) := _escape(redact(unescape(t))) if _suspect(t)

else := t

# METADATA
# title: The secret table
# description: |
#   The one table of secret patterns, owned by Go (internal/redact.Secrets)
#   and compiled into every policy and bundle as data.mcpx.secrets: key-name
#   parts, exact names and the names that count tokens; value shapes as RE2
#   regexes with the submatch that is the secret and the one that must be a
#   secret key name; the entropy test. Without it, every key counts as a
#   secret and every string is hidden whole (fail closed).
_table := data.mcpx.secrets

_have_table if {
	is_object(data.mcpx.secrets)
	is_array(data.mcpx.secrets.shapes)
}

_exact := {x | some x in _table.keyExact}

_counts := {x | some x in _table.keyCounts}

_schemes := {x | some x in _table.schemes}

# _any matches wherever some shape or some run could: a string it does not
# match has nothing to redact.
_any := concat("|", array.concat([sprintf("(?:%s)", [sh.re]) | some sh in _table.shapes], [_table.entropy.run]))

_suspect(s) if not predicates.plain_text(s)

# shapeless holds when the table is loaded and s, short enough to be
# searched (maxScan characters), matches none of its shapes and runs.
shapeless(s) if {
	_have_table
	count(s) <= _table.maxScan
	not regex.match(_any, s)
	not regex.match(_json_start, s)
}

# _json_start matches a string that may hold JSON text, which is read as
# JSON too (_json_finds).
_json_start := `^[ \t\n\r]*[\[{"]`

# secret_key is true when a key names a secret: its normalised form (lower
# case, letters and digits only) is one of the exact names or contains one
# of the parts, and is not a name that counts tokens (max_tokens).
secret_key(key) if {
	is_string(key)
	not _have_table
}

secret_key(key) if {
	is_string(key)
	_have_table
	n := regex.replace(lower(key), `[^a-z0-9]`, "")
	n != ""
	not n in _counts
	_named(n)
}

_named(n) if n in _exact

_named(n) if {
	some part in _table.keyParts
	contains(n, part)
}

# METADATA
# description: |
#   redact replaces every secret-shaped part of s, as Go's
#   render.RedactString does and from the same table: each shape finds its
#   secrets in s as given, random-looking runs are judged with those masked,
#   and every occurrence of every secret found becomes
#   "[REDACTED <kind>, <n> chars]" (overlapping ones one marker).
redact(s) := scrub(s, set())

# scrub is redact that also replaces every text of known (secrets seen
# elsewhere, such as the call's secret-named arguments), raw or escaped as
# in JSON text.
scrub(s, known) := _scrub(s, known, [])

# _scrub is scrub that also replaces every text of extra, finds
# [rank, kind, text] made around s (the command line of its array).
_scrub(s, known, extra) := s if {
	_have_table
	count(known) == 0
	count(extra) == 0
	not _suspect(s)
} else := _marker("no secret table", s) if {
	not _have_table
} else := _marker("long value", s) if {
	# a string longer than maxScan is not searched: it is shown as its size
	count(s) > _table.maxScan
} else := _apply(s, _hits(s, known, extra)) if {
	count(s) <= _table.maxScan
}

# _hits is every secret text found in s → [rank, kind]: the lowest-ranked
# finder names it (known secrets and what JSON text in s hides -1, shapes
# and the finds of extra by their place in the table, runs last).
_hits(s, known, extra) := _merge(array.flatten([k, f, r])) if {
	k := [[-1, "by key name", t] |
		some sec in known
		count(sec) >= _table.minScrub
		some t in _escapings(sec)
		contains(s, t)
	]
	f := array.flatten([_shape_finds(s), _json_finds(s), [x | some x in extra; x[2] != ""; contains(s, x[2])]])
	r := _run_finds(_apply(s, _merge(array.concat(k, f))))
}

# METADATA
# description: |
#   _json_finds is what JSON text in s hides, where it stands in s (raw or
#   escaped as in JSON text): the values a name hides (by their key,
#   beside them), the secrets of its command lines, and what JSON text in
#   its own strings hides (two levels of JSON text in all; Go's
#   render.MaxJSONDepth).
_json_finds(s) := _finds_in(s, _hidden_json(json.unmarshal(s))) if _json_text(s)

else := []

_json_text(s) if {
	regex.match(_json_start, s)
	json.is_valid(s)
}

_finds_in(s, hidden) := [[-1, kind, e] |
	some [kind, t] in hidden
	some e in _escapings(t)
	e != ""
	contains(s, e)
]

_hidden_json(v) := _hidden_here(v) | {[kind, e] |
	walk(v, [_, x])
	is_string(x)
	_json_text(x)
	some [_, kind, e] in _finds_in(x, _hidden_here(json.unmarshal(x)))
}

# _hidden_here is every [kind, text] hidden in v by a name (its key's,
# one beside it), found by a shape in its strings and keys, or found on a
# command line of its arrays.
_hidden_here(v) := ({["by key name", _text(x)] |
	roots := _named_roots(v)
	walk(v, [p, x])
	count(p) > 0
	_scalar(x)
	_named_path("", p, roots)
} | {[kind, t] |
	ctx := _ctx_finds(v)
	walk(v, [p, x])
	is_string(x)
	count(p) > 0
	some [_, kind, t] in _ctx_at(ctx, p)
	t != ""
	contains(x, t)
}) | {[kind, t] |
	walk(v, [p, x])
	some s in array.concat([x | is_string(x)], [k | count(p) > 0; k := p[count(p) - 1]; is_string(k)])
	count(s) <= _table.maxScan
	some [_, kind, t] in _shape_finds(s)
}

# _merge keeps, for each text, its lowest-ranked find: sorted by text then
# rank, the first of each text (a sort, so many finds stay cheap).
_merge(finds) := {x[0]: [x[1], x[2]] |
	sorted := sort([[t, r, kind] | some [r, kind, t] in finds])
	some i, x in sorted
	_first_of(sorted, i)
}

_first_of(_, 0)

_first_of(sorted, i) if sorted[i - 1][0] != sorted[i][0]

_escapings(sec) := {sec, substring(j, 1, count(j) - 2)} if j := json.marshal(sec)

_shape_finds(s) := [] if not regex.match(_shapes_any, s)

_shape_finds(s) := [[rank, sh.kind, val] |
	some rank, sh in _table.shapes
	regex.match(sh.re, s)
	some m in regex.find_all_string_submatch_n(sh.re, s, -1)
	val := m[sh.group]
	val != ""
	_named_ok(sh, m, val)
	not startswith(val, "[REDACTED")
] if regex.match(_shapes_any, s)

# _shapes_any matches wherever some shape could.
_shapes_any := concat("|", [sprintf("(?:%s)", [sh.re]) | some sh in _table.shapes])

_named_ok(sh, _, _) if sh.name == 0

_named_ok(sh, m, val) if {
	sh.name > 0
	secret_key(m[sh.name])
	not lower(trim(val, _table.trim)) in _schemes
}

_run_finds(masked) := [[count(_table.shapes), "high-entropy", seg] |
	some run in regex.find_n(_table.entropy.run, masked, -1)
	some seg in _segments(run)
	_high(seg)
]

# A path is judged segment by segment.
_segments(run) := split(run, "/") if {
	some p in ["/", "~"]
	startswith(run, p)
}

_segments(run) := [run] if {
	not startswith(run, "/")
	not startswith(run, "~")
}

# METADATA
# description: |
#   _high is Go's highEntropy with one difference: Rego has no logarithm,
#   so instead of at least entropy.bits of Shannon entropy per character it
#   asks for at least entropy.minDistinct distinct characters, which every
#   string with that entropy has. It hides at least what Go hides.
_high(run) if {
	e := _table.entropy
	count(run) >= e.minRun
	not regex.match(e.uuid, run)
	not regex.match(e.hex, run)
	digits := count(regex.replace(run, `[^0-9]`, ""))
	digits >= e.minDigits
	uppers := count(regex.replace(run, `[^A-Z]`, ""))
	lowers := count(regex.replace(run, `[^a-z]`, ""))
	uppers + lowers > 0
	_varied(count(run), uppers, lowers, digits, e)
	count({c | some c in _run_chars; contains(run, c)}) >= e.minDistinct
}

_varied(_, uppers, lowers, _, _) if {
	uppers >= 2
	lowers >= 2
}

_varied(n, _, _, digits, e) if {
	n >= e.denseRun
	digits >= e.denseDigits * n
}

_run_chars := split("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=_-", "")

# _apply replaces every occurrence of every text of hits in s by a marker;
# occurrences that overlap or touch are one marker, named by the first (at
# the same place, the lowest-ranked) of them.
# max_spans bounds the work per string: a string with more occurrences of
# secrets than this is hidden whole (Go replaces each; this hides more).
max_spans := 200

_apply(s, hits) := s if count(hits) == 0

_apply(s, hits) := _marker("many secrets", s) if count(hits) > max_spans

_apply(s, hits) := _marker("many secrets", s) if {
	count(hits) > 0
	count(hits) <= max_spans
	count([1 | some t, _ in hits; some _ in indexof_n(s, t)]) > max_spans
}

_apply(s, hits) := r if {
	count(hits) > 0
	count(hits) <= max_spans
	spans := [[p, p + count(t), h] | some t, h in hits; some p in indexof_n(s, t)]
	count(spans) <= max_spans
	starts := sort({a | some [a, _, _] in spans; not _covers_start(spans, a)})
	ends := sort({b | some [_, b, _] in spans; not _covers_end(spans, b)})
	r := concat("", array.concat(
		[concat("", [substring(s, _from(ends, i), starts[i] - _from(ends, i)), _span_marker(s, spans, starts[i], ends[i])]) |
			some i in numbers.range(0, count(starts) - 1)
		],
		[substring(s, ends[count(ends) - 1], -1)],
	))
}

_covers_start(spans, x) if {
	some [a, b, _] in spans
	a < x
	x <= b
}

_covers_end(spans, x) if {
	some [a, b, _] in spans
	a <= x
	x < b
}

_from(_, 0) := 0

_from(ends, i) := ends[i - 1] if i > 0

_span_marker(s, spans, a, b) := _marker(min({h | some [a2, _, h] in spans; a2 == a})[1], substring(s, a, b - a))

# secrets_in returns the secrets of a call's arguments that free text may
# echo: every string and number under a secret key name, and every secret
# the table finds in the other strings and in the keys.
secrets_in(args) := _secrets_in(args, _named_roots(args), _ctx_finds(args))

_secrets_in(args, roots, ctx) := ({t |
	walk(args, [p, x])
	count(p) > 0
	_named_path("", p, roots)
	_scalar(x)
	t := _text(x)
} | {t |
	walk(args, [p, x])
	count(p) > 0
	not _named_path("", p, roots)
	is_string(x)
	count(x) <= _table.maxScan
	extra := _ctx_at(ctx, p)
	_suspect_or(x, extra)
	some t, _ in _hits(x, set(), extra)
}) | {t |
	walk(args, [p, _])
	count(p) > 0
	k := p[count(p) - 1]
	is_string(k)
	count(k) <= _table.maxScan
	_suspect(k)
	some t, _ in _hits(k, set(), [])
}

_suspect_or(x, _) if _suspect(x)

_suspect_or(_, extra) if count(extra) > 0

_text(x) := x if is_string(x)

_text(x) := json.marshal(x) if is_number(x)

# list renders at most n quoted names of at most 80 characters, then how many
# more there were.
list(names, n) := concat(", ", [quote(s, 80) | some s in names]) if count(names) <= n

list(names, n) := sprintf("%s and %d more", [
	concat(", ", [quote(names[i], 80) | some i in numbers.range(0, n - 1)]),
	count(names) - n,
]) if count(names) > n

# METADATA
# description: |
#   nearest returns the candidate most like key, or "" when none is at
#   least half alike. Likeness is the Dice coefficient over character
#   bigrams of the lowercased, space-padded names, raised to 0.9 for an
#   anagram (a swapped pair of letters, "tial" for "tail"). Ties go to the
#   first in sort order. A pure function of its arguments (a caller's key
#   and a schema's declared names), so the embedded engine keeps its answer
#   per key and name list (custom memo, ADR 0005; bounded by the memo's
#   size): an agent that repeats a wrong key is answered from the memo.
# custom:
#   memo: true
nearest(key, candidates) := best if {
	k := _shape(key)
	scored := [[0 - l, c] |
		some c in candidates
		b := _candidate(c)
		l := max([(2 * count(k.bigrams & b.bigrams)) / (count(k.bigrams) + count(b.bigrams)), 0.9 * to_number(k.letters == b.letters)])
		l >= 0.5
	]
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

# unescape is a JSON Pointer token's key ("~1" is "/", "~0" is "~"). OPA's
# replace builds a strings.Replacer on every call: only a token that
# holds "~" is replaced.
unescape(t) := replace(replace(t, "~1", "/"), "~0", "~") if contains(t, "~")

else := t

# pointer renders a key path as a JSON Pointer.
pointer(path) := concat("", [sprintf("/%s", [_escape(seg)]) | some seg in path])

# Most keys need no escaping; replace builds a replacer on every call, so
# it runs only when the key holds "~" or "/".
_escape(seg) := seg if {
	is_string(seg)
	not contains(seg, "~")
	not contains(seg, "/")
} else := replace(replace(seg, "~", "~0"), "/", "~1") if {
	is_string(seg)
} else := format_int(seg, 10) if {
	is_number(seg)
}
