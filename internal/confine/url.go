package confine

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// URLs is a compiled urlWithin: the schemes, hosts and ports a URL may
// name. Hosts are lower case; Suffixes are the wildcard entries without
// their "*" (".example.com" for "*.example.com"); IPs are canonical IPv4
// and bracketed IPv6 literals ("10.0.0.1", "[::1]"). Schemes maps each
// allowed scheme to the explicit ports a URL may name and whether it may
// name none.
type URLs struct {
	Schemes  map[string]SchemePorts
	Hosts    []string
	Suffixes []string
	IPs      []string
}

// SchemePorts is what one allowed scheme's URLs may say about the port:
// Explicit lists the ports a URL may write, Bare is whether it may write
// none (its default port is allowed, or ports are not restricted).
type SchemePorts struct {
	Explicit []int
	Bare     bool
}

// defaultPorts are the ports a URL of these schemes reaches when it names
// none. Without ports in urlWithin a URL may write only its scheme's
// default port (or none); a scheme without a default may write no port.
var defaultPorts = map[string]int{"http": 80, "https": 443, "ws": 80, "wss": 443, "ftp": 21}

var (
	schemeRE  = regexp.MustCompile(`^[a-z][a-z0-9+.-]*$`)
	urlRE     = regexp.MustCompile(`^([A-Za-z][A-Za-z0-9+.-]*)://([^/?#]*)(.*)$`)
	badPct    = regexp.MustCompile(`%([^0-9A-Fa-f]|[0-9A-Fa-f][^0-9A-Fa-f]|[0-9A-Fa-f]?$)`)
	hostPort  = regexp.MustCompile(`^([a-z0-9.-]+|\[[0-9a-f:.]+\])(:[0-9]*)?$`)
	portRE    = regexp.MustCompile(`^[1-9][0-9]{0,4}$`)
	numLabel  = regexp.MustCompile(`^(0x[0-9a-f]*|[0-9]+)$`)
	ipv4RE    = regexp.MustCompile(`^(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])(\.(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])){3}$`)
	labelRE   = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]*[a-z0-9])?$`)
	forbidden = `\"<>^` + "`{|}"
)

// ParseURLs reads urlWithin's value (decoded JSON): an object with hosts
// (required), schemes (default ["https"]) and ports. Hosts are DNS names
// in ASCII (punycode for an IDN), wildcards "*.example.com" (any name
// below example.com, not example.com itself), canonical IPv4 addresses or
// bracketed IPv6 addresses; names and schemes are matched without regard
// to case. Without ports, a URL may name only its scheme's default port
// (http and ws 80, https and wss 443, ftp 21) or none. Refused, with the reason: anything else (a trailing dot, a
// non-ASCII name, a port in a host, a number-like name such as 0x7f.1).
func ParseURLs(v any) (URLs, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return URLs{}, fmt.Errorf("want an object with hosts, and optionally schemes and ports")
	}
	for k := range m {
		if k != "hosts" && k != "schemes" && k != "ports" {
			return URLs{}, fmt.Errorf("unknown key %q (want hosts, schemes, ports)", k)
		}
	}
	out := URLs{Schemes: map[string]SchemePorts{}}
	hosts, err := listOf(m["hosts"], "hosts")
	if err != nil {
		return URLs{}, fmt.Errorf("hosts: %w", err)
	}
	for _, h := range hosts {
		if err := out.addHost(h); err != nil {
			return URLs{}, err
		}
	}
	schemes := []string{"https"}
	if raw, ok := m["schemes"]; ok {
		if schemes, err = listOf(raw, "schemes"); err != nil {
			return URLs{}, fmt.Errorf("schemes: %w", err)
		}
	}
	var ports []int
	if raw, ok := m["ports"]; ok {
		xs, ok := raw.([]any)
		if !ok || len(xs) == 0 {
			return URLs{}, fmt.Errorf("ports: want a non-empty list of port numbers")
		}
		for _, x := range xs {
			n, err := -1, error(nil)
			switch x.(type) {
			case json.Number, float64, int:
				n, err = strconv.Atoi(fmt.Sprint(x))
			}
			if err != nil || n < 1 || n > 65535 {
				return URLs{}, fmt.Errorf("ports: %v is not a port number (1 to 65535)", x)
			}
			ports = append(ports, n)
		}
	}
	for _, s := range schemes {
		s = strings.ToLower(s)
		if !schemeRE.MatchString(s) {
			return URLs{}, fmt.Errorf("scheme %q is not a URL scheme (letters, digits, + - .; starting with a letter)", s)
		}
		sp := SchemePorts{}
		def, hasDef := defaultPorts[s]
		switch {
		case ports != nil:
			sp.Explicit = slices.Clone(ports)
			sp.Bare = hasDef && slices.Contains(ports, def)
		case hasDef:
			sp.Explicit = []int{def}
			sp.Bare = true
		default:
			sp.Explicit = []int{}
			sp.Bare = true
		}
		out.Schemes[s] = sp
	}
	return out, nil
}

func (u *URLs) addHost(h string) error {
	l := strings.ToLower(h)
	switch {
	case strings.HasPrefix(l, "[") && strings.HasSuffix(l, "]"):
		a, err := netip.ParseAddr(l[1 : len(l)-1])
		if err != nil || !a.Is6() || a.Zone() != "" {
			return fmt.Errorf("host %q is not an IPv6 address in brackets", h)
		}
		if c := "[" + a.String() + "]"; c != l {
			return fmt.Errorf("host %q: write the IPv6 address in its canonical form, %s", h, c)
		}
		u.IPs = append(u.IPs, l)
		return nil
	case ipv4RE.MatchString(l):
		u.IPs = append(u.IPs, l)
		return nil
	case strings.HasPrefix(l, "*."):
		if why := dnsName(l[2:]); why != "" {
			return fmt.Errorf("host %q: %s", h, why)
		}
		u.Suffixes = append(u.Suffixes, l[1:])
		return nil
	}
	if why := dnsName(l); why != "" {
		return fmt.Errorf("host %q: %s", h, why)
	}
	u.Hosts = append(u.Hosts, l)
	return nil
}

// dnsName says what is wrong with a lower-case host name for an allowlist,
// or "".
func dnsName(h string) string {
	for _, r := range h {
		if r > 0x7e {
			return "write the name in ASCII (an IDN in its punycode form, xn--…)"
		}
	}
	if strings.HasSuffix(h, ".") {
		return "write the name without a trailing dot"
	}
	labels := strings.Split(h, ".")
	if numLabel.MatchString(labels[len(labels)-1]) {
		return "a name that ends in a number reads as an IPv4 address: write an address as a.b.c.d"
	}
	if len(h) > 253 {
		return "a DNS name is at most 253 characters"
	}
	for _, l := range labels {
		if len(l) > 63 || !labelRE.MatchString(l) {
			return "not a DNS name (labels of letters, digits and inner hyphens, 1 to 63 characters)"
		}
	}
	return ""
}

// Data is the compiled allowlist as the generated Rego reads it.
func (u URLs) Data() map[string]any {
	schemes := map[string]any{}
	for s, sp := range u.Schemes {
		ports := make([]any, len(sp.Explicit))
		for i, p := range sp.Explicit {
			ports[i] = p
		}
		schemes[s] = map[string]any{"ports": ports, "bare": sp.Bare}
	}
	set := func(xs []string) map[string]any {
		m := make(map[string]any, len(xs))
		for _, x := range xs {
			m[x] = true
		}
		return m
	}
	return map[string]any{"schemes": schemes, "hosts": set(u.Hosts), "suffixes": strs(u.Suffixes), "ips": set(u.IPs)}
}

// Check decides whether the URL s stays inside the allowlist: ok, or why
// not (the violation's detail). The rules, in the order they are tested:
//
//   - only visible ASCII: no control character, space or non-ASCII
//     character (an IDN host in punycode; anything else percent-encoded);
//   - none of \ " < > ^ ` { | }, which URL parsers read differently (a
//     backslash is a path separator to a browser's parser and part of the
//     user name to Go's);
//   - every % followed by two hex digits;
//   - the form scheme://authority, then a path, query or fragment;
//   - an allowed scheme, in any case;
//   - no userinfo: an authority with @ is refused (https://good.com@evil.com
//     goes to evil.com);
//   - no % in the authority: a percent-encoded host is decoded differently;
//   - a host that is a DNS name, an IPv4 address or a bracketed IPv6
//     address, and an optional port of digits;
//   - a port of 1 to 65535 written without leading zeros;
//   - an IPv6 host listed exactly (canonical form, in any case);
//   - no trailing dot and no empty label;
//   - a name whose last label is a number (0x7f.1, 2130706433, 127.1)
//     must be a canonical IPv4 address, listed exactly;
//   - a DNS name of valid labels (at most 63 characters each, 253 in all),
//     listed, or below a listed wildcard;
//   - the port: one the scheme allows (see ParseURLs).
func (u URLs) Check(s string) (ok bool, why string) {
	switch {
	case strings.IndexFunc(s, func(r rune) bool { return r == ' ' || controlRune(r) }) >= 0:
		return false, "has a control character or a space"
	case strings.IndexFunc(s, func(r rune) bool { return r > 0x7e }) >= 0:
		return false, "has a non-ASCII character (write the host in punycode, xn--…, and percent-encode the rest)"
	case strings.ContainsAny(s, forbidden):
		return false, "has a character URL parsers read differently (\\ \" < > ^ ` { | } must be percent-encoded)"
	case badPct.MatchString(s):
		return false, "has a % that is not followed by two hex digits"
	}
	m := urlRE.FindStringSubmatch(s)
	if m == nil {
		return false, "is not an absolute URL of the form scheme://host/…"
	}
	scheme, auth := strings.ToLower(m[1]), m[2]
	sp, known := u.Schemes[scheme]
	switch {
	case !known:
		return false, "has the scheme " + scheme + ", which is not allowed"
	case strings.Contains(auth, "@"):
		return false, "has userinfo (user@host), which is refused: https://good.com@evil.com goes to evil.com"
	case strings.Contains(auth, "%"):
		return false, "has percent-encoding in the host, which URL parsers decode differently"
	}
	hp := hostPort.FindStringSubmatch(strings.ToLower(auth))
	if hp == nil {
		return false, "has a host that is not a DNS name, an IPv4 address or an IPv6 address in brackets"
	}
	host, port := hp[1], hp[2]
	n := 0
	if port != "" {
		if !portRE.MatchString(port[1:]) {
			return false, "has an invalid port (1 to 65535, no leading zeros)"
		}
		n, _ = strconv.Atoi(port[1:])
		if n > 65535 {
			return false, "has an invalid port (1 to 65535, no leading zeros)"
		}
	}
	if why := u.hostWhy(host); why != "" {
		return false, why
	}
	switch {
	case port == "" && !sp.Bare:
		return false, "names no port, and the default port of " + scheme + " is not allowed"
	case port != "" && !slices.Contains(sp.Explicit, n):
		return false, "has the port " + port[1:] + ", which is not allowed for " + scheme
	}
	return true, ""
}

func (u URLs) hostWhy(host string) string {
	notListed := "has the host " + host + ", which is not allowed"
	if strings.HasPrefix(host, "[") {
		if slices.Contains(u.IPs, host) {
			return ""
		}
		return notListed
	}
	if strings.HasSuffix(host, ".") {
		return "has a host with a trailing dot"
	}
	labels := strings.Split(host, ".")
	if slices.Contains(labels, "") {
		return "has a host with an empty label"
	}
	if numLabel.MatchString(labels[len(labels)-1]) {
		switch {
		case !ipv4RE.MatchString(host):
			return "has a host that reads as an IPv4 address but is not one written a.b.c.d"
		case slices.Contains(u.IPs, host):
			return ""
		}
		return notListed
	}
	if len(host) > 253 {
		return "has a host name longer than 253 characters"
	}
	for _, l := range labels {
		if len(l) > 63 || !labelRE.MatchString(l) {
			return "has a host name that is not a DNS name"
		}
	}
	if slices.Contains(u.Hosts, host) {
		return ""
	}
	for _, suf := range u.Suffixes {
		if strings.HasSuffix(host, suf) {
			return ""
		}
	}
	return notListed
}
