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
		got := text.nearest(c.key, c.candidates)
		print(c.key, got)
		got == c.want
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
