package confine_test

import (
	"math/rand/v2"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/mcpx/mcpx-policy/internal/confine"
)

func roots(t testing.TB, rs ...string) confine.Roots {
	t.Helper()
	xs := make([]any, len(rs))
	for i, r := range rs {
		xs[i] = r
	}
	r, err := confine.ParseRoots(xs)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// pathCases are the held-in tricks and the paths that must stay allowed,
// under the roots /workspace and /srv/data (and C:\work where a case is
// Windows).
var pathCases = []struct {
	path string
	ok   bool
	why  string // the detail, when ok is false ("" to skip the check)
}{
	{"/workspace/notes.md", true, ""},
	{"/workspace", true, ""},
	{"/workspace/", true, ""},
	{"/workspace/./notes.md", true, ""},
	{"/workspace//src///main.go", true, ""},
	{"/./workspace/x", true, ""},
	{"/workspace/a..b/c", true, ""},
	{"/workspace/...", true, ""},
	{"/workspace/.hidden", true, ""},
	{"/srv/data/x y/z", true, ""},
	{"/workspace/ünïcode/文件", true, ""},
	{"/workspace/../etc/cron.d/x", false, `has a ".." segment, which is refused; it resolves to /etc/cron.d/x`},
	{"/workspace/./../etc/passwd", false, `has a ".." segment, which is refused; it resolves to /etc/passwd`},
	{"/workspace//../etc/passwd", false, `has a ".." segment, which is refused; it resolves to /etc/passwd`},
	{"/workspace/a/../../etc/passwd", false, `has a ".." segment, which is refused; it resolves to /etc/passwd`},
	{"/workspace/..", false, `has a ".." segment, which is refused; it resolves to /`},
	{"/workspace/a/../b", false, `has a ".." segment, which is refused; it resolves to /workspace/b`},
	{"/../../workspace/x", false, `has a ".." segment, which is refused; it resolves to /workspace/x`},
	{"/workspace-evil/x", false, "resolves to /workspace-evil/x, which is outside every root"},
	{"/workspace-evil", false, "resolves to /workspace-evil, which is outside every root"},
	{"/workspacex", false, "resolves to /workspacex, which is outside every root"},
	{"/srv/database", false, "resolves to /srv/database, which is outside every root"},
	{"/srv", false, "resolves to /srv, which is outside every root"},
	{"/", false, "resolves to /, which is outside every root"},
	{"/etc/passwd", false, "resolves to /etc/passwd, which is outside every root"},
	{"workspace/x", false, "is relative: write an absolute path"},
	{"./workspace/x", false, "is relative: write an absolute path"},
	{"../workspace/x", false, "is relative: write an absolute path"},
	{"", false, "is relative: write an absolute path"},
	{"~/x", false, "is relative: write an absolute path"},
	{"/workspace/x\x00.txt", false, "has a control character"},
	{"/workspace/x\n", false, "has a control character"},
	{"/workspace/\u0085x", false, "has a control character"},
	{"/workspace/\x7f", false, "has a control character"},
	{"/workspace/\xc8", false, "has an invalid UTF-8 sequence or U+FFFD"},
	{"/workspace/\ufffd", false, "has an invalid UTF-8 sequence or U+FFFD"},
	{"A:\\\xc8", false, "has an invalid UTF-8 sequence or U+FFFD"},
	{"//workspace/x", false, `starts with two separators (a UNC or network path such as \\host\share or //host/share)`},
	{`\\server\share\x`, false, `starts with two separators (a UNC or network path such as \\host\share or //host/share)`},
	{`/workspace\..\etc\passwd`, false, "has a backslash, which a Windows server reads as a separator"},
	{`C:\work\x`, true, ""},
	{`c:/work/x`, true, ""},
	{`C:\work`, true, ""},
	{`C:\work\\sub\.\x`, true, ""},
	{`C:\workshop\x`, false, `resolves to C:\workshop\x, which is outside every root`},
	{`C:\Work\x`, false, `resolves to C:\Work\x, which is outside every root`},
	{`D:\work\x`, false, `resolves to D:\work\x, which is outside every root`},
	{`C:\work\..\x`, false, `has a ".." segment, which is refused; it resolves to C:\x`},
	{`C:work\x`, false, `is drive-relative (C:x): write the drive, a separator and the path, such as C:\x`},
	{`C:\work\x:stream`, false, "has a colon after the drive (an alternate data stream)"},
	{`C:\work\x?`, false, `has a character Windows does not allow in a name (< > " | ? *)`},
	{`C:\work\x.`, false, "has a name ending in a dot or a space, which Windows strips"},
	{`C:\work\x \y`, false, "has a name ending in a dot or a space, which Windows strips"},
	{`C:\work\.. \x`, false, "has a name ending in a dot or a space, which Windows strips"},
	{`C:\work\NUL.txt`, false, "names a Windows device (CON, NUL, COM1…)"},
	{`C:\work\com¹`, false, "names a Windows device (CON, NUL, COM1…)"},
	{`C:\work\console`, true, ""},
}

func TestPathCases(t *testing.T) {
	t.Parallel()
	r := roots(t, "/workspace", "/srv/data", `C:\work`)
	f := harness(t)
	for _, c := range pathCases {
		ok, why := r.Check(c.path)
		if ok != c.ok || (c.why != "" && why != c.why) {
			t.Errorf("Go: %q: ok %v (%s), want %v (%s)", c.path, ok, why, c.ok, c.why)
		}
		rok, rwhy := f.path(t, c.path, r)
		if rok != ok || rwhy != why {
			t.Errorf("Rego and Go differ on %q: Rego %v %q, Go %v %q", c.path, rok, rwhy, ok, why)
		}
	}
}

// TestWindowsPathsNeedAWindowsRoot: with POSIX roots only, every Windows
// form is refused.
func TestWindowsPathsNeedAWindowsRoot(t *testing.T) {
	t.Parallel()
	r := roots(t, "/")
	f := harness(t)
	for _, p := range []string{`C:\x`, `c:/x`, `C:x`, `\\host\share`, `/a\b`} {
		ok, why := r.Check(p)
		if ok {
			t.Errorf("%q passes under the root /", p)
		}
		if rok, rwhy := f.path(t, p, r); rok != ok || rwhy != why {
			t.Errorf("Rego and Go differ on %q: Rego %v %q, Go %v %q", p, rok, rwhy, ok, why)
		}
	}
	if ok, _ := r.Check("/any/where"); !ok {
		t.Error("the root / refuses /any/where")
	}
}

func TestParseRoots(t *testing.T) {
	t.Parallel()
	good := map[string]string{"/": "/", "/workspace": "/workspace", "/a b/c": "/a b/c", `c:\work`: `C:\work`, `C:/work/x`: `C:\work\x`, `d:\`: `D:\`}
	for in, want := range good {
		r, err := confine.ParseRoots([]any{in})
		if err != nil {
			t.Errorf("%q: %v", in, err)
			continue
		}
		got := append(r.Posix, r.Windows...)
		if len(got) != 1 || got[0] != want {
			t.Errorf("%q: %v, want %s", in, got, want)
		}
	}
	for _, bad := range []string{"", "workspace", "/workspace/", "/workspace/.", "/a/../b", "//srv", "/a//b", `\\srv\x`, `/a\b`, "/a\x00", `C:work`, `C:\work\`, `C:\a\..\b`, `C:\a:b`, `C:\nul`, `C:\a.`} {
		if _, err := confine.ParseRoots([]any{bad}); err == nil {
			t.Errorf("root %q is accepted", bad)
		}
	}
	for _, bad := range []any{nil, []any{}, "/workspace", []any{1}, map[string]any{}} {
		if _, err := confine.ParseRoots(bad); err == nil {
			t.Errorf("pathWithin %v is accepted", bad)
		}
	}
}

var winRooted = regexp.MustCompile(`^[A-Za-z]:[\\/]`)

// stdlibWithin is what the standard library says about s under the POSIX
// roots: the path as path.Clean (and filepath.Clean, on this system)
// leaves it is a root or below one at a separator. Check may refuse more
// (a "..", a backslash, a control character, a leading //), never less,
// and refuses only those on top of what this refuses.
func stdlibWithin(s string, roots []string) (clean string, ok bool) {
	clean = path.Clean(s)
	if filepath.Clean(s) != clean {
		panic("filepath.Clean and path.Clean differ on " + s)
	}
	if !path.IsAbs(s) {
		return clean, false
	}
	for _, r := range roots {
		if clean == r || strings.HasPrefix(clean, strings.TrimSuffix(r, "/")+"/") {
			return clean, true
		}
	}
	return clean, false
}

// extra says whether s has what Check refuses beyond the standard
// library's view: a ".." segment, a backslash, a control character,
// invalid UTF-8 or U+FFFD, a leading //, a drive letter.
func extra(s string) bool {
	return strings.ContainsAny(s, `\`) || strings.HasPrefix(s, "//") || strings.ContainsRune(s, utf8.RuneError) ||
		strings.IndexFunc(s, func(r rune) bool { return r < 0x20 || (r >= 0x7f && r <= 0x9f) }) >= 0 ||
		(len(s) >= 2 && s[1] == ':' && (s[0]|0x20 >= 'a' && s[0]|0x20 <= 'z')) ||
		strings.Contains("/"+s+"/", "/../")
}

// checkAgainstStdlib holds Check on s to the standard library: when Check
// accepts, path.Clean's result is inside a root; when the standard library
// accepts and s has none of the extra refusals, Check accepts; the path a
// refusal names is path.Clean's. A Windows path (drive letter) is held to
// path.Clean of its part after the drive, / and \ both separators.
func checkAgainstStdlib(t testing.TB, r confine.Roots, s string) {
	t.Helper()
	ok, why := r.Check(s)
	var clean string
	var std bool
	if winRooted.MatchString(s) && !strings.ContainsAny(s[2:], ":<>\"|?*") {
		rest := path.Clean(strings.ReplaceAll(s[2:], `\`, "/"))
		clean = strings.ToUpper(s[:1]) + ":" + strings.ReplaceAll(rest, "/", `\`)
		for _, root := range r.Windows {
			std = std || clean == root || strings.HasPrefix(clean, strings.TrimSuffix(root, `\`)+`\`)
		}
		if std && !ok && !strings.Contains("/"+strings.ReplaceAll(s[3:], `\`, "/")+"/", "/../") &&
			!strings.HasSuffix(why, "which Windows strips") && !strings.HasPrefix(why, "names a Windows device") && !strings.HasPrefix(why, "has a control") && !strings.HasPrefix(why, "has an invalid UTF-8") {
			t.Errorf("%q: path.Clean gives %s, inside %v, but Check refuses: %s", s, clean, r.Windows, why)
		}
	} else {
		clean, std = stdlibWithin(s, r.Posix)
		if std && !ok && !extra(s) {
			t.Errorf("%q: path.Clean gives %s, inside %v, but Check refuses: %s", s, clean, r.Posix, why)
		}
	}
	switch {
	case ok && !std:
		t.Errorf("%q: Check accepts, but path.Clean gives %s, outside %v", s, clean, r)
	case strings.HasPrefix(why, "resolves to ") && !strings.HasPrefix(why, "resolves to "+clean+", "):
		t.Errorf("%q: Check says %q, path.Clean gives %s", s, why, clean)
	case strings.Contains(why, "; it resolves to ") && !strings.HasSuffix(why, "; it resolves to "+clean):
		t.Errorf("%q: Check says %q, path.Clean gives %s", s, why, clean)
	}
}

// genPath draws a path from the pieces tricks are made of.
func genPath(rng *rand.Rand) string {
	pieces := []string{"/", "/", "/", "//", ".", "..", "workspace", "workspace-evil", "srv", "data", "database", "a", "..b", "...", "x y", "\\", "\x00", "\n", "C:", "c:", "é", "~", ":", "?"}
	var b strings.Builder
	b.WriteString([]string{"/", "/workspace/", "/srv/data/", "", `C:\work\`, "/workspace"}[rng.IntN(6)])
	for n := rng.IntN(9); n >= 0; n-- {
		b.WriteString(pieces[rng.IntN(len(pieces))])
	}
	return b.String()
}

// TestPathsAgainstStdlibAndRego: on generated paths, Check against the
// standard library's cleaning, and the Rego against Check, verdict and
// detail.
func TestPathsAgainstStdlibAndRego(t *testing.T) {
	t.Parallel()
	r := roots(t, "/workspace", "/srv/data", `C:\work`)
	f := harness(t)
	rng := rand.New(rand.NewPCG(27, 1))
	n := 4000
	if testing.Short() {
		n = 400
	}
	accepted := 0
	for i := 0; i < n; i++ {
		s := genPath(rng)
		checkAgainstStdlib(t, r, s)
		ok, why := r.Check(s)
		if ok {
			accepted++
		}
		if rok, rwhy := f.path(t, s, r); rok != ok || rwhy != why {
			t.Fatalf("Rego and Go differ on %q: Rego %v %q, Go %v %q", s, rok, rwhy, ok, why)
		}
	}
	t.Logf("%d generated paths, %d accepted", n, accepted)
	if accepted < n/20 {
		t.Errorf("only %d of %d generated paths are accepted: the generator misses the common case", accepted, n)
	}
}

// FuzzPath holds Check to the standard library and the Rego to Check on
// any string:
//
//	go test -run '^$' -fuzz FuzzPath -fuzztime 10m ./internal/confine/
func FuzzPath(f *testing.F) {
	for _, c := range pathCases {
		f.Add(c.path)
	}
	r := roots(f, "/workspace", "/srv/data", `C:\work`)
	h := harness(f)
	f.Fuzz(func(t *testing.T, s string) {
		checkAgainstStdlib(t, r, s)
		ok, why := r.Check(s)
		if rok, rwhy := h.path(t, s, r); rok != ok || rwhy != why {
			t.Fatalf("Rego and Go differ on %q: Rego %v %q, Go %v %q", s, rok, rwhy, ok, why)
		}
	})
}
