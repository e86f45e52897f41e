package confine

import (
	"maps"
	"slices"
	"strings"
)

// The Rego form of Check: helper functions a generated rule package
// includes when its schema uses pathWithin or urlWithin
// (internal/config/schemarego). Fixed text, standard builtins only; the
// roots and the allowlist come in as the argument r, the compiled Data of
// the keyword. Each _…_why is an else chain in the order of its Go
// counterpart's checks and yields "" for a value that passes.
//
// Entry points: _path_ok(v, r) and _url_ok(v, r), the validity
// predicates (a string that passes, or an array of them); _path_viols(v,
// p, r, e) and _url_viols(v, p, r, e), the violations of v at JSON
// Pointer p, e being the keyword's value as written.

// Helper constraint names, as violations report them.
const (
	PathKeyword = "pathWithin"
	URLKeyword  = "urlWithin"
)

// Rego returns the helpers, each helper's name mapped to its Rego source
// (one or more rules, without a package line), and for each the helpers
// it calls. The maps are the caller's own.
func Rego() (helpers map[string]string, deps map[string][]string) {
	helpers = maps.Clone(regoHelpers)
	deps = make(map[string][]string, len(regoDeps))
	for name, d := range regoDeps {
		deps[name] = slices.Clone(d)
	}
	return helpers, deps
}

var regoHelpers = withListHelpers(map[string]string{

	"_path_why": `_path_why(s, r) := "has a control character" if {
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

else := 1`,

	"_url_why": `_url_why(s, r) := "has a control character or a space" if {
	regex.match("[\\x00-\\x20\\x7f-\\x{9f}]", s)
} else := "has a non-ASCII character (write the host in punycode, xn--…, and percent-encode the rest)" if {
	regex.match("[^\\x00-\\x7e]", s)
} else := "has a character URL parsers read differently (\\ \" < > ^ \u0060 { | } must be percent-encoded)" if {
	regex.match("[\\\\\"<>^\\x60{|}]", s)
} else := "has a % that is not followed by two hex digits" if {
	regex.match("%([^0-9A-Fa-f]|[0-9A-Fa-f][^0-9A-Fa-f]|[0-9A-Fa-f]?$)", s)
} else := "is not an absolute URL of the form scheme://host/…" if {
	not regex.match("^[A-Za-z][A-Za-z0-9+.-]*://", s)
} else := _url_auth_why(m[1], m[2], r) if {
	m := regex.find_all_string_submatch_n("^([A-Za-z][A-Za-z0-9+.-]*)://([^/?#]*)(.*)$", s, 1)[0]
}

_url_auth_why(x, auth, r) := concat("", ["has the scheme ", lower(x), ", which is not allowed"]) if {
	not r.schemes[lower(x)]
} else := "has userinfo (user@host), which is refused: https://good.com@evil.com goes to evil.com" if {
	contains(auth, "@")
} else := "has percent-encoding in the host, which URL parsers decode differently" if {
	contains(auth, "%")
} else := "has a host that is not a DNS name, an IPv4 address or an IPv6 address in brackets" if {
	not regex.match("^([a-z0-9.-]+|\\[[0-9a-f:.]+\\])(:[0-9]*)?$", lower(auth))
} else := _url_hp_why(lower(x), hp[1], hp[2], r) if {
	hp := regex.find_all_string_submatch_n("^([a-z0-9.-]+|\\[[0-9a-f:.]+\\])(:[0-9]*)?$", lower(auth), 1)[0]
}

_url_hp_why(scheme, host, port, r) := "has an invalid port (1 to 65535, no leading zeros)" if {
	port != ""
	not _url_port_ok(port)
} else := why if {
	why := _url_host_why(host, r)
	why != ""
} else := concat("", ["names no port, and the default port of ", scheme, " is not allowed"]) if {
	port == ""
	not r.schemes[scheme].bare
} else := concat("", ["has the port ", substring(port, 1, -1), ", which is not allowed for ", scheme]) if {
	port != ""
	not to_number(substring(port, 1, -1)) in r.schemes[scheme].ports
} else := ""

_url_port_ok(port) if {
	regex.match("^:[1-9][0-9]{0,4}$", port)
	to_number(substring(port, 1, -1)) <= 65535
}

_url_host_why(host, r) := "" if {
	startswith(host, "[")
	r.ips[host]
} else := concat("", ["has the host ", host, ", which is not allowed"]) if {
	startswith(host, "[")
} else := "has a host with a trailing dot" if {
	endswith(host, ".")
} else := "has a host with an empty label" if {
	"" in split(host, ".")
} else := "has a host that reads as an IPv4 address but is not one written a.b.c.d" if {
	_url_numeric(host)
	not regex.match("^(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])(\\.(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])){3}$", host)
} else := "" if {
	_url_numeric(host)
	r.ips[host]
} else := concat("", ["has the host ", host, ", which is not allowed"]) if {
	_url_numeric(host)
} else := "has a host name longer than 253 characters" if {
	count(host) > 253
} else := "has a host name that is not a DNS name" if {
	some l in split(host, ".")
	_url_bad_label(l)
} else := "" if {
	r.hosts[host]
} else := "" if {
	some suf in r.suffixes
	endswith(host, suf)
} else := concat("", ["has the host ", host, ", which is not allowed"])

_url_numeric(host) if {
	labels := split(host, ".")
	regex.match("^(0x[0-9a-f]*|[0-9]+)$", labels[count(labels) - 1])
}

_url_bad_label(l) if count(l) > 63

_url_bad_label(l) if not regex.match("^[a-z0-9]([a-z0-9-]*[a-z0-9])?$", l)`,
})

var regoDeps = map[string][]string{
	"_path_ok":    {"_path_why"},
	"_path_viols": {"_path_why"},
	"_url_ok":     {"_url_why"},
	"_url_viols":  {"_url_why"},
}

// withListHelpers adds to helpers the two Rego helpers each keyword has
// over a string or a list of them, alike but for the keyword's names:
// _K_ok (the value passes) and _K_viols (its violations), both built on
// _K_why.
func withListHelpers(helpers map[string]string) map[string]string {
	for _, k := range []struct{ kind, keyword, noun, nouns string }{
		{"path", "pathWithin", "a path", "paths"},
		{"url", "urlWithin", "a URL", "URLs"},
	} {
		r := strings.NewReplacer("_K_", "_"+k.kind+"_", "KEYWORD", k.keyword, "NOUNS", k.nouns, "NOUN", k.noun)
		helpers["_"+k.kind+"_ok"] = r.Replace(listOK)
		helpers["_"+k.kind+"_viols"] = r.Replace(listViols)
	}
	return helpers
}

// listOK and listViols are withListHelpers' templates.
const listOK = `_K_ok(v, r) if {
	is_string(v)
	_K_why(v, r) == ""
}

_K_ok(v, r) if {
	is_array(v)
	count([x | some x in v; not _K_item_ok(x, r)]) == 0
}

_K_item_ok(x, r) if {
	is_string(x)
	_K_why(x, r) == ""
}`

const listViols = `_K_viols(v, p, r, e) := [{"path": p, "value": v, "constraint": "KEYWORD", "expected": e, "detail": why} |
	why := _K_why(v, r)
	why != ""
] if {
	is_string(v)
} else := [{"path": concat("/", [p, format_int(i, 10)]), "value": x, "constraint": "KEYWORD", "expected": e, "detail": why} |
	some i, x in v
	why := _K_item_why(x, r)
	why != ""
] if {
	is_array(v)
} else := [{"path": p, "value": v, "constraint": "KEYWORD", "expected": e, "detail": "is not NOUN (a string) or a list of NOUNS"}]

_K_item_why(x, r) := _K_why(x, r) if {
	is_string(x)
} else := "is not NOUN (a string)"`
