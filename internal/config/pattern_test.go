package config_test

import (
	"regexp"
	"testing"

	"github.com/mcpx/mcpx-policy/internal/config"
)

func TestGlobToRE2(t *testing.T) {
	t.Parallel()
	cases := []struct {
		glob    string
		re      string
		match   []string
		nomatch []string
	}{
		{"delete_*", `(?s)^delete_.*$`, []string{"delete_", "delete_file", "delete_a/b"}, []string{"xdelete_file", "delete"}},
		{"*", `(?s)^.*$`, []string{"", "a/b/c"}, nil},
		{"fs/*", `(?s)^fs/.*$`, []string{"fs/read", "fs/a/b"}, []string{"fsx/read"}},
		{"a**b", `(?s)^a.*b$`, []string{"ab", "a/x/b"}, []string{"abc"}},
		{"file?", `(?s)^file.$`, []string{"file1", "file/"}, []string{"file", "file12"}},
		{"[abc]_x", `(?s)^[abc]_x$`, []string{"a_x", "c_x"}, []string{"d_x", "ab_x"}},
		{"[a-z]*", `(?s)^[a-z].*$`, []string{"read"}, []string{"Read", "_read"}},
		{"[!a-z]*", `(?s)^[^a-z].*$`, []string{"Read", "_x", "/x"}, []string{"read"}},
		{"[^0-9]", `(?s)^[^0-9]$`, []string{"x"}, []string{"7"}},
		{"[]x]*", `(?s)^[\]x].*$`, []string{"]a", "xa"}, []string{"a"}},
		{"[!]]", `(?s)^[^\]]$`, []string{"a"}, []string{"]"}},
		{"[a-]", `(?s)^[a\-]$`, []string{"a", "-"}, []string{"b"}},
		{"v1.2+*", `(?s)^v1\.2\+.*$`, []string{"v1.2+beta"}, []string{"v1x2+beta", "v1.22beta"}},
		{"f(x)|y*", `(?s)^f\(x\)\|y.*$`, []string{"f(x)|yz"}, []string{"f(x)", "y"}},
		{"a^b$c*", `(?s)^a\^b\$c.*$`, []string{"a^b$cd"}, nil},
		{`lit\*x?`, `(?s)^lit\*x.$`, []string{"lit*xy"}, []string{"litaxy"}},
		{"[\\]]?", `(?s)^[\]].$`, []string{"]a"}, nil},
		{"git_[a-c]ush*", `(?s)^git_[a-c]ush.*$`, []string{"git_bush", "git_cush_force"}, []string{"git_push", "git_"}},
	}
	for _, tc := range cases {
		t.Run(tc.glob, func(t *testing.T) {
			t.Parallel()
			got, err := config.GlobToRE2(tc.glob)
			if err != nil {
				t.Fatalf("GlobToRE2(%q): %v", tc.glob, err)
			}
			if got != tc.re {
				t.Errorf("GlobToRE2(%q) = %q, want %q", tc.glob, got, tc.re)
			}
			re := regexp.MustCompile(got)
			p, err := config.ParsePattern(tc.glob)
			if err != nil {
				t.Fatal(err)
			}
			if p.Kind != config.Glob || p.RE != got {
				t.Errorf("ParsePattern(%q) = %v %q", tc.glob, p.Kind, p.RE)
			}
			for _, s := range tc.match {
				if !re.MatchString(s) || !p.Match(s) {
					t.Errorf("%q should match %q", tc.glob, s)
				}
			}
			for _, s := range tc.nomatch {
				if re.MatchString(s) || p.Match(s) {
					t.Errorf("%q should not match %q", tc.glob, s)
				}
			}
		})
	}
}

func TestParsePattern(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in      string
		kind    config.PatternKind
		re      string
		match   []string
		nomatch []string
		err     string
	}{
		{in: "write_file", kind: config.Exact, re: `^write_file$`, match: []string{"write_file"}, nomatch: []string{"write_files", "xwrite_file"}},
		{in: "a.b", kind: config.Exact, re: `^a\.b$`, match: []string{"a.b"}, nomatch: []string{"axb"}},
		{in: "/^move_/", kind: config.Regex, re: `^move_`, match: []string{"move_file"}, nomatch: []string{"remove_file"}},
		{in: "/move/", kind: config.Regex, re: `move`, match: []string{"remove_file", "move"}, nomatch: []string{"mov"}},
		{in: "", err: "empty tool pattern"},
		{in: "//", err: `tool pattern "//" is an empty regex`},
		{in: "/a(?P<x/", err: "tool pattern \"/a(?P<x/\" is not a valid RE2 regex: error parsing regexp: invalid named capture: `(?P<x`"},
		{in: "/(?=x)/", err: "tool pattern \"/(?=x)/\" is not a valid RE2 regex: error parsing regexp: invalid or unsupported Perl syntax: `(?=`"},
		{in: "a[", err: `tool pattern "a[" is not a valid glob: unterminated [ (a class ends with ])`},
		{in: "a[!", err: `tool pattern "a[!" is not a valid glob: unterminated [ (a class ends with ])`},
		{in: `a*\`, err: `tool pattern "a*\\" is not a valid glob: trailing \ at the end`},
	}
	for _, tc := range cases {
		p, err := config.ParsePattern(tc.in)
		if tc.err != "" {
			if err == nil || err.Error() != tc.err {
				t.Errorf("ParsePattern(%q) error = %v, want %s", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParsePattern(%q): %v", tc.in, err)
			continue
		}
		if p.Kind != tc.kind || p.RE != tc.re || p.Source != tc.in {
			t.Errorf("ParsePattern(%q) = %+v", tc.in, p)
		}
		for _, s := range tc.match {
			if !p.Match(s) || !regexp.MustCompile(p.RE).MatchString(s) {
				t.Errorf("%q should match %q", tc.in, s)
			}
		}
		for _, s := range tc.nomatch {
			if p.Match(s) || regexp.MustCompile(p.RE).MatchString(s) {
				t.Errorf("%q should not match %q", tc.in, s)
			}
		}
	}
}
