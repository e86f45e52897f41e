package confine_test

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"net/url"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/mcpx/mcpx-policy/internal/confine"
)

func urls(t testing.TB, doc string) confine.URLs {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(doc), &v); err != nil {
		t.Fatal(err)
	}
	u, err := confine.ParseURLs(v)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// allow is the allowlist of the URL cases and the generated URLs.
const allow = `{"schemes": ["https", "http", "git"], "hosts": ["good.com", "*.github.io", "api.example.org", "10.0.0.1", "[::1]", "xn--bcher-kva.example"]}`

var urlCases = []struct {
	url string
	ok  bool
	why string
}{
	{"https://good.com", true, ""},
	{"https://good.com/", true, ""},
	{"https://GOOD.com/a?b=c#d", true, ""},
	{"HTTPS://good.com:443/x", true, ""},
	{"http://good.com:80/x", true, ""},
	{"https://user.github.io/repo", true, ""},
	{"https://a.b.github.io/", true, ""},
	{"https://10.0.0.1/x", true, ""},
	{"https://[::1]/x", true, ""},
	{"https://xn--bcher-kva.example/", true, ""},
	{"https://good.com/%7Euser/a%20b", true, ""},
	{"git://good.com/repo.git", true, ""},
	{"https://good.com/path/@/x", true, ""},
	{"https://good.com?next=https://evil.com", true, ""},
	{"https://good.com@evil.com", false, "has userinfo (user@host), which is refused: https://good.com@evil.com goes to evil.com"},
	{"https://user:pass@good.com/", false, "has userinfo (user@host), which is refused: https://good.com@evil.com goes to evil.com"},
	{"https://evil.com#@good.com", false, "has the host evil.com, which is not allowed"},
	{"https://evil.com?@good.com", false, "has the host evil.com, which is not allowed"},
	{"https://good.com.evil.com/", false, "has the host good.com.evil.com, which is not allowed"},
	{"https://evilgood.com/", false, "has the host evilgood.com, which is not allowed"},
	{"https://github.io/", false, "has the host github.io, which is not allowed"},
	{"https://good.com./", false, "has a host with a trailing dot"},
	{"https://good..com/", false, "has a host with an empty label"},
	{"https://.good.com/", false, "has a host with an empty label"},
	{"https://good%2ecom/", false, "has percent-encoding in the host, which URL parsers decode differently"},
	{"https://%67ood.com/", false, "has percent-encoding in the host, which URL parsers decode differently"},
	{"https://bücher.example/", false, "has a non-ASCII character (write the host in punycode, xn--…, and percent-encode the rest)"},
	{"https://ｇｏｏｄ.com/", false, "has a non-ASCII character (write the host in punycode, xn--…, and percent-encode the rest)"},
	{"https://good.com\\@evil.com/", false, "has a character URL parsers read differently (\\ \" < > ^ ` { | } must be percent-encoded)"},
	{"https:\\\\evil.com", false, "has a character URL parsers read differently (\\ \" < > ^ ` { | } must be percent-encoded)"},
	{"https://go\tod.com/", false, "has a control character or a space"},
	{"https://good.com/\n", false, "has a control character or a space"},
	{" https://good.com", false, "has a control character or a space"},
	{"https://good.com/a b", false, "has a control character or a space"},
	{"https://good.com/%zz", false, "has a % that is not followed by two hex digits"},
	{"https://good.com/%4", false, "has a % that is not followed by two hex digits"},
	{"https:good.com", false, "is not an absolute URL of the form scheme://host/…"},
	{"//good.com/x", false, "is not an absolute URL of the form scheme://host/…"},
	{"good.com", false, "is not an absolute URL of the form scheme://host/…"},
	{"https:/good.com", false, "is not an absolute URL of the form scheme://host/…"},
	{"https:///evil.com", false, "has a host that is not a DNS name, an IPv4 address or an IPv6 address in brackets"},
	{"https://", false, "has a host that is not a DNS name, an IPv4 address or an IPv6 address in brackets"},
	{"javascript://good.com/%0aalert(1)", false, "has the scheme javascript, which is not allowed"},
	{"ftp://good.com/", false, "has the scheme ftp, which is not allowed"},
	{"file:///etc/passwd", false, "has the scheme file, which is not allowed"},
	{"https://good.com:8443/", false, "has the port 8443, which is not allowed for https"},
	{"https://good.com:80/", false, "has the port 80, which is not allowed for https"},
	{"https://good.com:0443/", false, "has an invalid port (1 to 65535, no leading zeros)"},
	{"https://good.com:/", false, "has an invalid port (1 to 65535, no leading zeros)"},
	{"https://good.com:99999/", false, "has an invalid port (1 to 65535, no leading zeros)"},
	{"https://good.com:443:443/", false, "has a host that is not a DNS name, an IPv4 address or an IPv6 address in brackets"},
	{"git://good.com:9418/", false, "has the port 9418, which is not allowed for git"},
	{"https://127.0.0.1/", false, "has the host 127.0.0.1, which is not allowed"},
	{"https://0x0a.0.0.1/", false, "has a host that reads as an IPv4 address but is not one written a.b.c.d"},
	{"https://167772161/", false, "has a host that reads as an IPv4 address but is not one written a.b.c.d"},
	{"https://10.1/", false, "has a host that reads as an IPv4 address but is not one written a.b.c.d"},
	{"https://010.0.0.1/", false, "has a host that reads as an IPv4 address but is not one written a.b.c.d"},
	{"https://good.com.0x1/", false, "has a host that reads as an IPv4 address but is not one written a.b.c.d"},
	{"https://[::ffff:10.0.0.1]/", false, "has the host [::ffff:10.0.0.1], which is not allowed"},
	{"https://[0:0:0:0:0:0:0:1]/", false, "has the host [0:0:0:0:0:0:0:1], which is not allowed"},
	{"https://[::1%25eth0]/", false, "has percent-encoding in the host, which URL parsers decode differently"},
	{"https://good_com/", false, "has a host that is not a DNS name, an IPv4 address or an IPv6 address in brackets"},
	{"https://-good.com/", false, "has a host name that is not a DNS name"},
	{"https://" + strings.Repeat("a", 64) + ".github.io/", false, "has a host name that is not a DNS name"},
}

func TestURLCases(t *testing.T) {
	t.Parallel()
	u := urls(t, allow)
	f := harness(t)
	for _, c := range urlCases {
		ok, why := u.Check(c.url)
		if ok != c.ok || (c.why != "" && why != c.why) {
			t.Errorf("Go: %q: ok %v (%s), want %v (%s)", c.url, ok, why, c.ok, c.why)
		}
		if rok, rwhy := f.url(t, c.url, u); rok != ok || rwhy != why {
			t.Errorf("Rego and Go differ on %q: Rego %v %q, Go %v %q", c.url, rok, rwhy, ok, why)
		}
		checkAgainstNetURL(t, u, c.url)
	}
}

func TestURLPorts(t *testing.T) {
	t.Parallel()
	f := harness(t)
	for _, c := range []struct {
		allow, url string
		ok         bool
	}{
		{`{"hosts": ["a.com"], "ports": [8443]}`, "https://a.com:8443/", true},
		{`{"hosts": ["a.com"], "ports": [8443]}`, "https://a.com/", false},
		{`{"hosts": ["a.com"], "ports": [443, 8443]}`, "https://a.com/", true},
		{`{"hosts": ["a.com"], "schemes": ["ssh"]}`, "ssh://a.com/", true},
		{`{"hosts": ["a.com"], "schemes": ["ssh"]}`, "ssh://a.com:22/", false},
		{`{"hosts": ["a.com"], "schemes": ["ssh"], "ports": [22]}`, "ssh://a.com:22/", true},
		{`{"hosts": ["a.com"], "schemes": ["ssh"], "ports": [22]}`, "ssh://a.com/", false},
		{`{"hosts": ["a.com"], "schemes": ["HTTPS"]}`, "https://a.com/", true},
		{`{"hosts": ["A.COM"]}`, "https://a.Com/", true},
		{`{"hosts": ["*.a.com"]}`, "https://a.com/", false},
		{`{"hosts": ["*.a.com"]}`, "https://x.a.com/", true},
		{`{"hosts": ["*.a.com"]}`, "https://xa.com/", false},
		{`{"hosts": ["[2001:db8::1]"]}`, "https://[2001:DB8::1]:443/", true},
	} {
		u := urls(t, c.allow)
		ok, why := u.Check(c.url)
		if ok != c.ok {
			t.Errorf("%s under %s: ok %v (%s), want %v", c.url, c.allow, ok, why, c.ok)
		}
		if rok, rwhy := f.url(t, c.url, u); rok != ok || rwhy != why {
			t.Errorf("Rego and Go differ on %q: Rego %v %q, Go %v %q", c.url, rok, rwhy, ok, why)
		}
		checkAgainstNetURL(t, u, c.url)
	}
}

func TestParseURLs(t *testing.T) {
	t.Parallel()
	for _, bad := range []string{
		`[]`, `{}`, `{"hosts": []}`, `{"hosts": ["a.com"], "extra": 1}`, `{"hosts": ["a.com."]}`, `{"hosts": ["bücher.de"]}`,
		`{"hosts": ["a.com:443"]}`, `{"hosts": ["0x7f.1"]}`, `{"hosts": ["127.1"]}`, `{"hosts": ["[0:0::1]"]}`,
		`{"hosts": ["*"]}`, `{"hosts": ["*.com."]}`, `{"hosts": ["a_b.com"]}`, `{"hosts": ["a.com"], "schemes": ["ht tp"]}`,
		`{"hosts": ["a.com"], "schemes": []}`, `{"hosts": ["a.com"], "ports": [0]}`, `{"hosts": ["a.com"], "ports": [65536]}`,
		`{"hosts": ["a.com"], "ports": ["443"]}`, `{"hosts": ["user@a.com"]}`, `{"hosts": ["a.com/x"]}`,
	} {
		var v any
		if err := json.Unmarshal([]byte(bad), &v); err != nil {
			t.Fatal(err)
		}
		if _, err := confine.ParseURLs(v); err == nil {
			t.Errorf("urlWithin %s is accepted", bad)
		}
	}
}

// checkAgainstNetURL holds an accepted URL to net/url's reading of it: it
// parses, with the scheme, host and port Check judged, and no userinfo.
// And the other way: a URL made of plain characters only (no @ % \ and
// the like) that net/url reads as an allowed host, scheme and port is
// accepted.
func checkAgainstNetURL(t testing.TB, u confine.URLs, s string) {
	t.Helper()
	ok, why := u.Check(s)
	p, err := url.Parse(s)
	if ok {
		switch {
		case err != nil:
			t.Errorf("%q: Check accepts, net/url refuses: %v", s, err)
			return
		case p.User != nil || p.Opaque != "":
			t.Errorf("%q: Check accepts, net/url reads userinfo %v or an opaque URL %q", s, p.User, p.Opaque)
		case !netAllowed(u, p):
			t.Errorf("%q: Check accepts, net/url reads scheme %q host %q port %q", s, p.Scheme, p.Hostname(), p.Port())
		}
		return
	}
	plain := strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-./:?#=&_~", r))
	}) < 0
	if plain && err == nil && p.User == nil && p.Opaque == "" && strings.HasPrefix(strings.ToLower(s), strings.ToLower(p.Scheme)+"://") &&
		netAllowed(u, p) && !strings.Contains(p.Host, "_") && !strings.HasSuffix(p.Host, ".") && !strings.Contains(p.Host, "..") &&
		!strings.HasPrefix(p.Host, ".") && !strings.HasPrefix(p.Host, "-") && !strings.Contains(p.Host, "-.") && !strings.Contains(p.Host, ".-") &&
		!strings.HasSuffix(p.Host, ":") && !strings.Contains(p.Host, ":0") && dnsSized(p.Hostname()) && dnsChars.MatchString(p.Hostname()) {
		t.Errorf("%q: net/url reads an allowed scheme, host and port, but Check refuses: %s", s, why)
	}
}

// dnsChars: what a DNS name or an IPv6 address (without brackets) is
// written with; net/url also lets sub-delimiters such as & into a host.
var dnsChars = regexp.MustCompile(`^[A-Za-z0-9.:-]+$`)

// dnsSized: labels of at most 63 characters, at most 253 in all.
func dnsSized(h string) bool {
	for _, l := range strings.Split(h, ".") {
		if len(l) > 63 {
			return false
		}
	}
	return len(h) <= 253
}

// netAllowed: net/url's scheme, host and port are on the allowlist.
func netAllowed(u confine.URLs, p *url.URL) bool {
	sp, ok := u.Schemes[strings.ToLower(p.Scheme)]
	if !ok {
		return false
	}
	h := strings.ToLower(p.Hostname())
	if strings.Contains(h, ":") {
		h = "[" + h + "]"
	}
	hostOK := slices.Contains(u.Hosts, h) || slices.Contains(u.IPs, h)
	for _, suf := range u.Suffixes {
		hostOK = hostOK || (strings.HasSuffix(h, suf) && len(h) > len(suf))
	}
	if !hostOK {
		return false
	}
	if p.Port() == "" {
		return sp.Bare
	}
	n, err := strconv.Atoi(p.Port())
	return err == nil && slices.Contains(sp.Explicit, n)
}

// genURL draws a URL from the pieces tricks are made of.
func genURL(rng *rand.Rand) string {
	schemes := []string{"https://", "https://", "https://", "HTTP://", "git://", "ftp://", "https:", "https:/", "https:///", "//", ""}
	hosts := []string{"good.com", "good.com", "good.com", "GOOD.COM", "a.x.github.io", "x.github.io", "github.io", "good.com.", "evil.com", "10.0.0.1", "0x0a.0.0.1", "167772161", "[::1]", "[::0:1]", "xn--bcher-kva.example", "bücher.example", "good%2ecom", "api.example.org", "a..b", ""}
	pre := []string{"", "", "", "", "", "", "user@", "good.com@", "evil.com\\@", "user:pw@"}
	ports := []string{"", "", "", "", "", ":443", ":80", ":8443", ":0443", ":", ":65536"}
	rest := []string{"", "/", "/a/b", "?q=1", "#f", "/%7e", "/%zz", "/a b", "/\n", "/@evil.com", "\\evil", "?@evil.com", "#@evil.com", "/ü"}
	pick := func(xs []string) string { return xs[rng.IntN(len(xs))] }
	return pick(schemes) + pick(pre) + pick(hosts) + pick(ports) + pick(rest)
}

// TestURLsAgainstNetURLAndRego: on generated URLs, Check against net/url,
// and the Rego against Check, verdict and detail.
func TestURLsAgainstNetURLAndRego(t *testing.T) {
	t.Parallel()
	u := urls(t, allow)
	f := harness(t)
	rng := rand.New(rand.NewPCG(27, 2))
	n := 4000
	if testing.Short() {
		n = 400
	}
	accepted := 0
	for i := 0; i < n; i++ {
		s := genURL(rng)
		checkAgainstNetURL(t, u, s)
		ok, why := u.Check(s)
		if ok {
			accepted++
		}
		if rok, rwhy := f.url(t, s, u); rok != ok || rwhy != why {
			t.Fatalf("Rego and Go differ on %q: Rego %v %q, Go %v %q", s, rok, rwhy, ok, why)
		}
	}
	t.Logf("%d generated URLs, %d accepted", n, accepted)
	if accepted < n/50 {
		t.Errorf("only %d of %d generated URLs are accepted: the generator misses the common case", accepted, n)
	}
}

// TestURLsAgainstWHATWG holds every accepted URL, of the cases and of
// generated ones, to the WHATWG URL parser (Node's URL, the parser of
// browsers and of most JavaScript MCP servers): it reads the same scheme,
// host and port, and no user name or password. It needs node, a
// prerequisite of the end-to-end tests.
func TestURLsAgainstWHATWG(t *testing.T) {
	t.Parallel()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("node is not installed: apt-get install nodejs npm (README.md#prerequisites)")
	}
	u := urls(t, allow)
	var in []string
	for _, c := range urlCases {
		in = append(in, c.url)
	}
	rng := rand.New(rand.NewPCG(27, 3))
	for i := 0; i < 3000; i++ {
		in = append(in, genURL(rng))
	}
	var accepted []string
	for _, s := range in {
		if ok, _ := u.Check(s); ok {
			accepted = append(accepted, s)
		}
	}
	src, _ := json.Marshal(accepted)
	script := `const urls = JSON.parse(require("fs").readFileSync(0, "utf8"));
console.log(JSON.stringify(urls.map(s => { try { const u = new URL(s); return {protocol: u.protocol, hostname: u.hostname, port: u.port, username: u.username, password: u.password}; } catch (e) { return {error: String(e)}; } })));`
	cmd := exec.Command(node, "-e", script)
	cmd.Stdin = bytes.NewReader(src)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v", err)
	}
	var got []struct {
		Protocol, Hostname, Port, Username, Password, Error string
	}
	if err := json.Unmarshal(out, &got); err != nil || len(got) != len(accepted) {
		t.Fatalf("node said %s (%v)", out, err)
	}
	for i, s := range accepted {
		w := got[i]
		scheme := strings.TrimSuffix(w.Protocol, ":")
		sp, ok := u.Schemes[scheme]
		host := strings.ToLower(w.Hostname) // a non-special scheme's host keeps its case (DNS ignores it)
		hostOK := slices.Contains(u.Hosts, host) || slices.Contains(u.IPs, host)
		for _, suf := range u.Suffixes {
			hostOK = hostOK || (strings.HasSuffix(host, suf) && len(host) > len(suf))
		}
		port := w.Port
		portOK := port == "" // WHATWG drops a scheme's default port
		if n, err := strconv.Atoi(port); err == nil {
			portOK = slices.Contains(sp.Explicit, n)
		}
		if w.Error != "" || !ok || !hostOK || !portOK || w.Username != "" || w.Password != "" {
			t.Errorf("%q: Check accepts, the WHATWG parser reads %+v", s, w)
		}
	}
	t.Logf("%d accepted URLs held to the WHATWG parser", len(accepted))
}

// FuzzURL holds Check to net/url and the Rego to Check on any string:
//
//	go test -run '^$' -fuzz FuzzURL -fuzztime 10m ./internal/confine/
func FuzzURL(f *testing.F) {
	for _, c := range urlCases {
		f.Add(c.url)
	}
	u := urls(f, allow)
	h := harness(f)
	f.Fuzz(func(t *testing.T, s string) {
		checkAgainstNetURL(t, u, s)
		ok, why := u.Check(s)
		if rok, rwhy := h.url(t, s, u); rok != ok || rwhy != why {
			t.Fatalf("Rego and Go differ on %q: Rego %v %q, Go %v %q", s, rok, rwhy, ok, why)
		}
	})
}
