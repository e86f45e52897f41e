package mcpx.rules.s_07fc9486a95ed7d5

violations[key] := vs if {
	some key, t in data.mcpx.steps.rules.targets.s_07fc9486a95ed7d5
	vs := _check(t.value, t.path)
}

_s0(v, p) := _url_viols(v, p, {"hosts": {"api.github.com": true}, "ips": {}, "schemes": {"https": {"bare": true, "ports": [443]}}, "suffixes": [".githubusercontent.com"]}, {"hosts": ["api.github.com", "*.githubusercontent.com"]})

_check(v, p) := [] if {
	_url_ok(v, {"hosts": {"api.github.com": true}, "ips": {}, "schemes": {"https": {"bare": true, "ports": [443]}}, "suffixes": [".githubusercontent.com"]})
} else := vs if {
	vs := _s0(v, p)
	count(vs) > 0
} else := [{"path": p, "value": v, "constraint": "$schema", "expected": true, "detail": "internal error: the generated fast and full checks disagree; refusing the value"}]

_url_why(s, r) := "has a control character or a space" if {
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

_url_bad_label(l) if not regex.match("^[a-z0-9]([a-z0-9-]*[a-z0-9])?$", l)

_url_ok(v, r) if {
	is_string(v)
	_url_why(v, r) == ""
}

_url_ok(v, r) if {
	is_array(v)
	count([x | some x in v; not _url_item_ok(x, r)]) == 0
}

_url_item_ok(x, r) if {
	is_string(x)
	_url_why(x, r) == ""
}

_url_viols(v, p, r, e) := [{"path": p, "value": v, "constraint": "urlWithin", "expected": e, "detail": why} |
	why := _url_why(v, r)
	why != ""
] if {
	is_string(v)
} else := [{"path": concat("/", [p, format_int(i, 10)]), "value": x, "constraint": "urlWithin", "expected": e, "detail": why} |
	some i, x in v
	why := _url_item_why(x, r)
	why != ""
] if {
	is_array(v)
} else := [{"path": p, "value": v, "constraint": "urlWithin", "expected": e, "detail": "is not a URL (a string) or a list of URLs"}]

_url_item_why(x, r) := _url_why(x, r) if {
	is_string(x)
} else := "is not a URL (a string)"
