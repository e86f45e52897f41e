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
	{"key": "api_key", "value": "abc", "want": "[REDACTED by key name, 3 chars]"},
	{"key": "Password", "value": "hunter2", "want": "[REDACTED by key name, 7 chars]"},
	{"key": "password", "value": "", "want": ""},
	{"key": "otp", "value": 482913, "want": "[REDACTED by key name, 6 chars]"},
	{"key": "max_tokens", "value": 4096, "want": 4096},
	{"key": "header", "value": "Bearer abcdefghijklmnop", "want": "Bearer [REDACTED bearer-token, 16 chars]"},
	{"key": "x", "value": "AKIAABCDEFGHIJKLMNOP", "want": "[REDACTED aws-access-key, 20 chars]"},
	{"key": "x", "value": "ghp_abcdefghijklmnopqrstuvwxyz0123456789", "want": "[REDACTED github-token, 40 chars]"},
	{"key": "x", "value": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig", "want": "[REDACTED jwt, 40 chars]"},
	{"key": "key", "value": "-----BEGIN RSA PRIVATE KEY-----\nMII", "want": "[REDACTED private-key, 35 chars]"},
	{"key": "count", "value": 7, "want": 7},
	{"key": "flags", "value": [true, false], "want": [true, false]},
	{"key": "env", "value": {"PGPASSWORD": "pg-pass-9981", "PGHOST": "db"}, "want": {"PGPASSWORD": "[REDACTED by key name, 12 chars]", "PGHOST": "db"}},
	{"key": "tokens", "value": ["a", 1, null], "want": ["a", 1, null]},
	{"key": "api_tokens", "value": ["plain-one", 2, false], "want": ["[REDACTED by key name, 9 chars]", "[REDACTED by key name, 1 chars]", false]},
	{
		"key": "headers", "value": {"ghp_abcdefghijklmnopqrstuvwxyz0123456789": {"v": "x"}},
		"want": {"[REDACTED github-token, 40 chars]": {"v": "x"}},
	},
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
	text.show("ids", {"list": json.marshal(big)}) == sprintf("%s… (%d bytes)", [substring(json.marshal({"list": json.marshal(big)}), 0, 120), count(json.marshal({"list": json.marshal(big)}))])
}

# Realistic secrets and what the policy shows of them; Go shows the same
# (TestRegoAgreesWithGo runs a longer table through both).
_redact_cases := [
	{"in": "mysql -u root -phunter2pass -h db.internal", "want": "mysql -u root -p[REDACTED password-flag, 11 chars] -h db.internal"},
	{"in": `{"password": "hunter2-Correct"}`, "want": `{"password": [REDACTED assignment, 15 chars]}`},
	{"in": `{\"password\": \"hunter2-Correct\"}`, "want": `{\"password\": [REDACTED assignment, 15 chars]}`},
	{"in": "-----BEGIN PGP PRIVATE KEY BLOCK-----\nlQOYBF\n-----END PGP PRIVATE KEY BLOCK-----", "want": "[REDACTED private-key, 80 chars]"},
	{"in": "key AKIAIOSFODNN7EXAMPLE and AKIAIOSFODNN7EXAMPLE", "want": "key [REDACTED aws-access-key, 20 chars] and [REDACTED aws-access-key, 20 chars]"},
	{"in": "curl -H 'Authorization: Bearer 8xKq0ZtYwV3nR7uLp2sD5fGh'", "want": "curl -H 'Authorization: Bearer [REDACTED bearer-token, 24 chars]'"},
	{"in": "postgres://app:Pg-S3cret-99@db:5432/prod", "want": "postgres://app:[REDACTED url-password, 12 chars]@db:5432/prod"},
	{"in": "blob Zk8Qm2Xr7Tn4Lp9Vw3Hs6Jd1Fb5Gc0Ya end", "want": "blob [REDACTED high-entropy, 32 chars] end"},
	{"in": "/srv/Zk8Qm2Xr7Tn4Lp9Vw3Hs6Jd1Fb5Gc0Ya/x", "want": "/srv/[REDACTED high-entropy, 32 chars]/x"},
	{"in": "max_tokens=500 Authorization: Bearer", "want": "max_tokens=500 Authorization: Bearer"},
	{"in": "/workspace/src/main.go", "want": "/workspace/src/main.go"},
	{"in": "550e8400-e29b-41d4-a716-446655440000", "want": "550e8400-e29b-41d4-a716-446655440000"},
	{"in": "3f786850e387550fdab836ed7e6dc881de23001b", "want": "3f786850e387550fdab836ed7e6dc881de23001b"},
	{"in": "aaaaaaaaaaBBBBBBBBBB1111111111", "want": "aaaaaaaaaaBBBBBBBBBB1111111111"},
	{"in": "password=[REDACTED assignment, 5 chars]", "want": "password=[REDACTED assignment, 5 chars]"},
]

test_redact if {
	every c in _redact_cases {
		got := text.redact(c.in)
		print(c.in, got)
		got == c.want
	}
}

_key_cases := {
	"password": true, "API-Key": true, "clientSecret": true, "session_id": true, "AccountKey": true,
	"pwd": true, "auth": true, "max_tokens": false, "tokenizer": false, "path": false, "key": false,
	"author": false, "bypass": false, "": false, "___": false,
}

test_secret_key if {
	every k, want in _key_cases {
		print(k)
		_is_secret_key(k) == want
	}
}

_is_secret_key(k) if text.secret_key(k)

_is_secret_key(k) := false if not text.secret_key(k)

test_redact_pointer if {
	text.redact_pointer("") == ""
	text.redact_pointer("/a/0") == "/a/0"
	text.redact_pointer("/h/ghp_abcdefghijklmnopqrstuvwxyz0123456789/x~1y") == "/h/[REDACTED github-token, 40 chars]/x~1y"
	text.redact_pointer("/Zk8Qm2Xr7Tn4Lp9Vw3Hs6Jd1Fb5Gc~1Ya") == "/[REDACTED high-entropy, 32 chars]"
}

test_many_secrets_hide_the_whole_string if {
	s := concat(" ", [sprintf("password=Secret-%d", [i]) | some i in numbers.range(1, 201)])
	text.redact(s) == sprintf("[REDACTED many secrets, %d chars]", [count(s)])
	few := concat(" ", [sprintf("password=Secret-%d", [i]) | some i in numbers.range(1, 3)])
	text.redact(few) == "password=[REDACTED assignment, 8 chars] password=[REDACTED assignment, 8 chars] password=[REDACTED assignment, 8 chars]"
}

test_strings_longer_than_max_scan_show_their_size_only if {
	long := concat("", ["a" | some _ in numbers.range(1, 16385)])
	text.show("content", long) == "[REDACTED long value, 16385 chars]"
	text.redact_pointer(sprintf("/%s", [long])) == "/[REDACTED long value, 16385 chars]"
	text.secrets_in({"content": long, long: 1}) == set()
}

test_sets_are_redacted_as_arrays if {
	got := text.value("", {"keys": {"ghp_abcdefghijklmnopqrstuvwxyz0123456789", "plain"}, "password": {"x"}}, set())
	got == {"keys": ["[REDACTED github-token, 40 chars]", "plain"], "password": ["[REDACTED by key name, 1 chars]"]}
}

test_overlapping_secrets_are_one_marker if {
	# "token=…" and a key known by name overlap: one marker covers both.
	got := text.scrub("token=abcdef-ghijkl and abcdef", {"abcdef-ghijkl", "abcdef"})
	got == "token=[REDACTED by key name, 13 chars] and [REDACTED by key name, 6 chars]"
}

test_scrub_finds_known_secrets_raw_and_escaped if {
	text.scrub(`refusing "pa\"ss-9981" and pa"ss-9981`, {`pa"ss-9981`}) == `refusing "[REDACTED by key name, 11 chars]" and [REDACTED by key name, 10 chars]`
	text.scrub("the pin abc", {"abc"}) == "the pin abc"
}

test_secrets_in_arguments if {
	args := {
		"password": "hunter2-Correct", "otp": 482913, "empty": {"token": ""},
		"command": "mysql -phunter2pass", "ghp_abcdefghijklmnopqrstuvwxyz0123456789": true, "path": "/a",
	}
	text.secrets_in(args) == {"hunter2-Correct", "482913", "hunter2pass", "ghp_abcdefghijklmnopqrstuvwxyz0123456789"}
}

# Without the table (a bundle built without it) every key is a secret and
# every string is hidden whole: fail closed.
test_without_the_table_everything_is_hidden if {
	text.show("path", "/workspace/a") == "[REDACTED by key name, 12 chars]" with data.mcpx.secrets as null
	text.redact("/workspace/a") == "[REDACTED no secret table, 12 chars]" with data.mcpx.secrets as null
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

# Redaction by structure: a value named a secret by what is beside it.
_structure_cases := [
	{
		"value": {"env": [{"name": "DB_PASSWORD", "value": "pw1"}, {"name": "LOG_LEVEL", "value": "debug"}]},
		"want": {"env": [{"name": "DB_PASSWORD", "value": "[REDACTED by key name, 3 chars]"}, {"name": "LOG_LEVEL", "value": "debug"}]},
	},
	{
		"value": {"s": {"key": "api_key", "val": "k1", "type": "x"}},
		"want": {"s": {"key": "api_key", "val": "[REDACTED by key name, 2 chars]", "type": "x"}},
	},
	{
		"value": {"ref": {"name": "db-creds", "key": "password"}},
		"want": {"ref": {"name": "db-creds", "key": "password"}},
	},
	{
		"value": {"unknown": [{"key": "api_key", "path": "/api_key", "suggestion": ""}]},
		"want": {"unknown": [{"key": "api_key", "path": "/api_key", "suggestion": ""}]},
	},
	{
		"value": {"headers": [["X-Api-Key", "k2"], ["Accept", "json"]]},
		"want": {"headers": [["X-Api-Key", "[REDACTED by key name, 2 chars]"], ["Accept", "json"]]},
	},
	{
		"value": {"argv": ["tool", "--password", "pw3", "--port", "5432"]},
		"want": {"argv": ["tool", "--password", "[REDACTED by key name, 3 chars]", "--port", "5432"]},
	},
	{
		"value": {"command": "mysql", "args": ["-u", "root", "-ppw4x", "shop"]},
		"want": {"command": "mysql", "args": ["-u", "root", "-p[REDACTED password-flag, 4 chars]", "shop"]},
	},
	{
		"value": {"argv": ["sshpass", "-p", "pw5x", "ssh", "web1"]},
		"want": {"argv": ["sshpass", "-p", "[REDACTED password-flag, 4 chars]", "ssh", "web1"]},
	},
	{
		"value": {"body": `{"env":[{"name":"DB_PASSWORD","value":"pw6x"}]}`},
		"want": {"body": `{"env":[{"name":"DB_PASSWORD","value":"[REDACTED by key name, 4 chars]"}]}`},
	},
	{
		"value": {"body": `{"note": "see password=pw7x now"}`},
		"want": {"body": `{"note": "see password=[REDACTED assignment, 4 chars] now"}`},
	},
	{
		"value": {"config": "db:\n  password:\n    pw8x\n"},
		"want": {"config": "db:\n  password:\n    [REDACTED block-value, 4 chars]\n"},
	},
]

test_value_by_structure if {
	every c in _structure_cases {
		got := text.value("", c.value, set())
		print(got)
		got == c.want
	}
}

test_show_at_hides_what_structure_names if {
	args := {"env": [{"name": "DB_PASSWORD", "value": "pw1"}], "command": "mysql", "args": ["-u", "root", "-ppw4x"], "credentials": {"user": "u"}}
	text.show_at(args, false, "/env/0/value", "value", "pw1") == "[REDACTED by key name, 3 chars]"
	text.show_at(args, false, "/env/0", "0", {"name": "DB_PASSWORD", "value": "pw1"}) == {"name": "DB_PASSWORD", "value": "[REDACTED by key name, 3 chars]"}
	text.show_at(args, false, "/args/2", "2", "-ppw4x") == "-p[REDACTED password-flag, 4 chars]"
	text.show_at(args, false, "/args", "args", ["-u", "root", "-ppw4x"]) == ["-u", "root", "-p[REDACTED password-flag, 4 chars]"]
	text.show_at(args, false, "/credentials/user", "user", "u") == "[REDACTED by key name, 1 chars]"
	text.show_at(args, false, "/command", "command", "mysql") == "mysql"
}

test_show_at_hides_a_named_value_whole if {
	args := {"env": [{"name": "DB_PASSWORD", "value": {"user": "u1", "pw": ["p2", true]}, "enabled": false}]}
	text.show_at(args, false, "/env/0/value", "value", {"user": "u1", "pw": ["p2", true]}) == {"user": "[REDACTED by key name, 2 chars]", "pw": ["[REDACTED by key name, 2 chars]", true]}
	text.show_at(args, false, "/env/0/enabled", "enabled", false) == false
}

test_secrets_in_by_structure if {
	s := text.secrets_in({"env": [{"name": "DB_PASSWORD", "value": "pw1x"}], "argv": ["mysql", "-ppw2x"]})
	"pw1x" in s
	"pw2x" in s
}

test_show_at_plain_arguments_judge_the_path_names if {
	text.show_at({"credentials": {"user": "u"}}, true, "/credentials/user", "user", "u") == "[REDACTED by key name, 1 chars]"
	text.show_at({"a": {"user": "u"}}, true, "/a/user", "user", "u") == "u"
	text.show_at({"a": "x"}, true, "/a", "a", "x") == "x"
}
