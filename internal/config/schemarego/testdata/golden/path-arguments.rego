package mcpx.rules.s_442cb3744506678b

violations[key] := vs if {
	some key, t in data.mcpx.steps.rules.targets.s_442cb3744506678b
	vs := _check(t.value, t.path)
}

_v0_patternProperties1(k, _) if not regex.match("^(path|paths|source|destination)$", k)

_v0_patternProperties1(_, x) if _path_ok(x, {"posix": ["/workspace"], "windows": []})

_s1(v, p) := _path_viols(v, p, {"posix": ["/workspace"], "windows": []}, null)

_s0(v, p) := [x5 | is_object(v); some x3, x4 in v; regex.match("^(path|paths|source|destination)$", x3); some x5 in _s1(x4, concat("/", [p, _esc(x3)]))]

_check(v, p) := [] if {
	is_object(v)
	every x1, x2 in v {
		_v0_patternProperties1(x1, x2)
	}
} else := [] if {
	not is_object(v)
} else := vs if {
	vs := _s0(v, p)
	count(vs) > 0
} else := [{"path": p, "value": v, "constraint": "$schema", "expected": true, "detail": "internal error: the generated fast and full checks disagree; refusing the value"}]

_path_why(s, r) := "has a control character" if {
	regex.match("[\\x00-\\x1f\\x7f-\\x{9f}]", s)
} else := "has an invalid UTF-8 sequence or U+FFFD" if {
	regex.match("\\x{fffd}", s)
} else := "starts with two separators (a UNC or network path such as \\\\host\\share or //host/share)" if {
	regex.match("^(\\\\\\\\|//)", s)
} else := _win_why(s, r) if {
	regex.match("^[A-Za-z]:", s)
} else := "has a backslash, which a Windows server reads as a separator" if {
	contains(s, "\\")
} else := "is relative: write an absolute path" if {
	not startswith(s, "/")
} else := _posix_why(_segs(split(s, "/")), r)

_posix_why(segs, r) := _dotdot(segs, "/", "/") if {
	".." in segs
} else := "" if {
	clean := concat("", ["/", concat("/", segs)])
	some root in r.posix
	_within(clean, root, "/")
} else := concat("", ["resolves to /", concat("/", segs), ", which is outside every root"])

_win_why(s, r) := "is a Windows path (drive letter), and no root is one" if {
	count(r.windows) == 0
} else := "is drive-relative (C:x): write the drive, a separator and the path, such as C:\\x" if {
	not regex.match("^[A-Za-z]:[\\\\/]", s)
} else := "has a colon after the drive (an alternate data stream)" if {
	contains(substring(s, 2, -1), ":")
} else := "has a character Windows does not allow in a name (< > \" | ? *)" if {
	regex.match("[<>\"|?*]", s)
} else := _win_segs_why(_win_segs(s), _win_head(s), r)

_win_segs_why(segs, head, r) := _dotdot(segs, head, "\\") if {
	".." in segs
} else := "has a name ending in a dot or a space, which Windows strips" if {
	some seg in segs
	regex.match("[. ]$", seg)
} else := "names a Windows device (CON, NUL, COM1…)" if {
	some seg in segs
	regex.match("(?i)^(con|prn|aux|nul|conin\\$|conout\\$|clock\\$|com[0-9¹²³]|lpt[0-9¹²³])(\\..*)?$", seg)
} else := "" if {
	clean := concat("", [head, concat("\\", segs)])
	some root in r.windows
	_within(clean, root, "\\")
} else := concat("", ["resolves to ", head, concat("\\", segs), ", which is outside every root"])

_win_head(s) := concat("", [upper(substring(s, 0, 1)), ":\\"])

_win_segs(s) := _segs(regex.split("[\\\\/]", substring(s, 3, -1)))

_segs(parts) := [x | some x in parts; x != ""; x != "."]

_within(clean, root, _) if clean == root

_within(clean, root, sep) if startswith(clean, concat("", [trim_suffix(root, sep), sep]))

_dotdot(segs, head, sep) := "has a \"..\" segment, which is refused" if {
	count(segs) > 256
} else := concat("", ["has a \"..\" segment, which is refused; it resolves to ", head, concat(sep, _resolve(segs))])

_resolve(segs) := [x |
	some j, x in segs
	x != ".."
	min(array.slice(hs, j + 1, count(hs))) >= hs[j + 1]
] if {
	ws := [_step(x) | some x in segs]
	ss := [sum(array.slice(ws, 0, k)) | some k in numbers.range(0, count(ws))]
	hs := [h |
		some k in numbers.range(0, count(ws))
		h := ss[k] - min(array.slice(ss, 0, k + 1))
	]
}

_step(x) := -1 if x == ".."

else := 1

_path_ok(v, r) if {
	is_string(v)
	_path_why(v, r) == ""
}

_path_ok(v, r) if {
	is_array(v)
	count([x | some x in v; not _path_item_ok(x, r)]) == 0
}

_path_item_ok(x, r) if {
	is_string(x)
	_path_why(x, r) == ""
}

_path_viols(v, p, r, e) := [{"path": p, "value": v, "constraint": "pathWithin", "expected": e, "detail": why} |
	why := _path_why(v, r)
	why != ""
] if {
	is_string(v)
} else := [{"path": concat("/", [p, format_int(i, 10)]), "value": x, "constraint": "pathWithin", "expected": e, "detail": why} |
	some i, x in v
	why := _path_item_why(x, r)
	why != ""
] if {
	is_array(v)
} else := [{"path": p, "value": v, "constraint": "pathWithin", "expected": e, "detail": "is not a path (a string) or a list of paths"}]

_path_item_why(x, r) := _path_why(x, r) if {
	is_string(x)
} else := "is not a path (a string)"

_esc(k) := replace(replace(k, "~", "~0"), "/", "~1")
