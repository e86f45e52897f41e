package mcpx.lib.text_test

import data.mcpx.lib.text

_nearest_cases := [
	{"key": "line", "candidates": ["lines", "path", "tail"], "want": "lines"},
	{"key": "tial", "candidates": ["lines", "path", "tail"], "want": "tail"},
	{"key": "PATH", "candidates": ["lines", "path", "tail"], "want": "path"},
	{"key": "zzz", "candidates": ["lines", "path", "tail"], "want": ""},
	{"key": "x", "candidates": [], "want": ""},
	{"key": "max_byte", "candidates": ["max_bytes", "max_tokens"], "want": "max_bytes"},
]

test_nearest if {
	every c in _nearest_cases {
		text.nearest(c.key, c.candidates) == c.want
	}
}

_show_cases := [
	{"key": "path", "value": "/workspace/a", "want": "/workspace/a"},
	{"key": "api_key", "value": "abc", "want": "[redacted]"},
	{"key": "Password", "value": "hunter2", "want": "[redacted]"},
	{"key": "header", "value": "Bearer abcdefghijklmnop", "want": "[redacted]"},
	{"key": "x", "value": "AKIAABCDEFGHIJKLMNOP", "want": "[redacted]"},
	{"key": "x", "value": "ghp_abcdefghijklmnopqrstuvwxyz0123456789", "want": "[redacted]"},
	{"key": "x", "value": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig", "want": "[redacted]"},
	{"key": "key", "value": "-----BEGIN RSA PRIVATE KEY-----\nMII", "want": "[redacted]"},
	{"key": "count", "value": 7, "want": 7},
	{"key": "flags", "value": [true, false], "want": [true, false]},
]

test_show if {
	every c in _show_cases {
		got := text.show(c.key, c.value)
		print(c.key, got)
		got == c.want
	}
}

test_show_cuts_long_strings_with_size if {
	long := concat("", ["a" | some _ in numbers.range(1, 300)])
	got := text.show("content", long)
	startswith(got, concat("", ["a" | some _ in numbers.range(1, 120)]))
	endswith(got, "… (300 characters)")
}

test_show_cuts_large_composites if {
	big := [i | some i in numbers.range(1, 200)]
	got := text.show("ids", big)
	endswith(got, sprintf("(%d bytes)", [count(json.marshal(big))]))
}

test_list_caps if {
	text.list(["a", "b"], 5) == `"a", "b"`
	text.list(["a", "b", "c"], 2) == `"a", "b" and 1 more`
}

test_pointer_escapes if {
	text.pointer(["a/b", "c~d", 0]) == "/a~1b/c~0d/0"
	text.pointer([]) == ""
}

# The first implementation of nearest, kept as the reference the faster one
# must agree with.
_reference_nearest(key, candidates) := best if {
	scored := [[0 - _ref_likeness(key, c), c] | some c in candidates; _ref_likeness(key, c) >= 0.5]
	count(scored) > 0
	best := sort(scored)[0][1]
}

_reference_nearest(key, candidates) := "" if {
	count([c | some c in candidates; _ref_likeness(key, c) >= 0.5]) == 0
}

_ref_likeness(a, b) := max([_ref_dice(a, b), _ref_anagram(a, b)])

_ref_dice(a, b) := (2 * count(_ref_bigrams(a) & _ref_bigrams(b))) / (count(_ref_bigrams(a)) + count(_ref_bigrams(b)))

_ref_anagram(a, b) := 0.9 if sort(split(lower(a), "")) == sort(split(lower(b), ""))

_ref_anagram(a, b) := 0 if sort(split(lower(a), "")) != sort(split(lower(b), ""))

_ref_bigrams(s) := {substring(p, i, 2) | p := sprintf(" %s ", [lower(s)]); some i in numbers.range(0, count(p) - 2)}

_names := [
	"path", "paths", "PATH", "tail", "tial", "lines", "line", "head", "max_bytes", "max_byte", "max_tokens",
	"content", "contnet", "contents", "encoding", "ecnoding", "a", "ab", "ba", "abc", "", "ÄÖÜ", "äöü", "path_to", "to_path",
]

test_nearest_agrees_with_reference if {
	every key in _names {
		every candidates in [_names, array.slice(_names, 0, 6), array.slice(_names, 6, 15), ["ab", "ba"], ["ba", "abc"], ["tail", "tial"], []] {
			text.nearest(key, candidates) == _reference_nearest(key, candidates)
		}
	}
}
