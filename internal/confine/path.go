package confine

import (
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"
)

// Roots is a compiled pathWithin: the folders a path must stay in. POSIX
// roots are clean absolute paths ("/", "/workspace"); Windows roots are a
// drive letter, upper case, and clean components joined by \ ("C:\",
// `C:\work`). A path in Windows form is judged against the Windows roots
// only, any other path against the POSIX roots only.
type Roots struct {
	Posix   []string
	Windows []string
}

var (
	drive       = regexp.MustCompile(`^[A-Za-z]:`)
	driveRooted = regexp.MustCompile(`^[A-Za-z]:[\\/]`)
	winSep      = regexp.MustCompile(`[\\/]`)
	winBad      = regexp.MustCompile(`[<>"|?*]`)
	// winDevice: names Windows opens as a device in every folder, with
	// any extension (NUL.txt is NUL)
	winDevice = regexp.MustCompile(`(?i)^(con|prn|aux|nul|conin\$|conout\$|clock\$|com[0-9¹²³]|lpt[0-9¹²³])(\..*)?$`)
)

// ParseRoots reads pathWithin's value (decoded JSON): a non-empty list of
// roots, each an absolute POSIX path or a Windows path with a drive
// letter, written clean. Refused, with the reason: anything else, a root
// that is relative, holds a control character, ".", ".." or an empty
// segment, ends with a separator (but "/" and "C:\"), is a UNC path, or,
// for a POSIX root, holds a backslash.
func ParseRoots(v any) (Roots, error) {
	list, err := listOf(v, "roots (absolute paths)")
	if err != nil {
		return Roots{}, err
	}
	var r Roots
	for _, s := range list {
		switch {
		case hasControl(s) || strings.ContainsRune(s, utf8.RuneError):
			return Roots{}, fmt.Errorf("root %q has a control character or U+FFFD", s)
		case strings.HasPrefix(s, `\\`) || strings.HasPrefix(s, "//"):
			return Roots{}, fmt.Errorf("root %q is a UNC or network path, which pathWithin does not support", s)
		case drive.MatchString(s):
			w, err := windowsRoot(s)
			if err != nil {
				return Roots{}, err
			}
			r.Windows = append(r.Windows, w)
		default:
			p, err := posixRoot(s)
			if err != nil {
				return Roots{}, err
			}
			r.Posix = append(r.Posix, p)
		}
	}
	return r, nil
}

func posixRoot(s string) (string, error) {
	switch {
	case !strings.HasPrefix(s, "/"):
		return "", fmt.Errorf("root %q is relative: write an absolute path such as /workspace", s)
	case strings.Contains(s, `\`):
		return "", fmt.Errorf("root %q has a backslash: write POSIX roots with / only", s)
	case s == "/":
		return s, nil
	}
	for _, seg := range strings.Split(s[1:], "/") {
		if seg == "" || seg == "." || seg == ".." {
			return "", fmt.Errorf("root %q is not written clean (no empty, . or .. segment, no trailing /): write %s", s, suggestClean(s))
		}
	}
	return s, nil
}

func windowsRoot(s string) (string, error) {
	if !driveRooted.MatchString(s) {
		return "", fmt.Errorf(`root %q is drive-relative: write the drive, a separator and the folder, such as C:\work`, s)
	}
	segs := winSep.Split(s[3:], -1)
	if len(segs) == 1 && segs[0] == "" {
		return strings.ToUpper(s[:1]) + `:\`, nil
	}
	for _, seg := range segs {
		switch {
		case seg == "" || seg == "." || seg == "..":
			return "", fmt.Errorf("root %q is not written clean (no empty, . or .. segment, no trailing separator)", s)
		case strings.Contains(seg, ":") || winBad.MatchString(seg):
			return "", fmt.Errorf(`root %q has a character Windows does not allow in a name (: < > " | ? *)`, s)
		case strings.HasSuffix(seg, ".") || strings.HasSuffix(seg, " "):
			return "", fmt.Errorf("root %q has a name ending in a dot or a space, which Windows strips", s)
		case winDevice.MatchString(seg):
			return "", fmt.Errorf("root %q names a Windows device", s)
		}
	}
	return strings.ToUpper(s[:1]) + `:\` + strings.Join(segs, `\`), nil
}

// suggestClean is s without empty and . segments and without a trailing
// slash, for an error's hint (".." left as it is: the root is refused
// anyway).
func suggestClean(s string) string {
	var keep []string
	for _, seg := range strings.Split(s, "/") {
		if seg != "" && seg != "." {
			keep = append(keep, seg)
		}
	}
	return "/" + strings.Join(keep, "/")
}

// Data is the compiled roots as the generated Rego reads them.
func (r Roots) Data() map[string]any {
	return map[string]any{"posix": strs(r.Posix), "windows": strs(r.Windows)}
}

func strs(xs []string) []any {
	out := make([]any, len(xs))
	for i, x := range xs {
		out[i] = x
	}
	return out
}

// Check decides whether the path s stays inside the roots: ok, or why not
// (the detail of the violation, which names the path s resolves to where
// there is one). The rules, in the order they are tested:
//
//   - no control character (C0, DEL, C1) anywhere;
//   - no invalid UTF-8 and no U+FFFD, which a decoder may have put in
//     its place (Rego reads some builtins' input by code points);
//   - no UNC or network form (\\host, //host);
//   - a Windows path (drive letter) only when a root is one: rooted
//     (C:\…, not C:…), no ":" after the drive, none of < > " | ? *, no "..",
//     no name ending in a dot or a space, no device name (CON, NUL.txt…),
//     and inside a Windows root, components compared exactly (the drive
//     letter in any case), / and \ both separators;
//   - any other path: no backslash, absolute, no ".." segment, and after
//     dropping empty and "." segments, the root itself or below it at a
//     separator (/workspace-evil is not inside /workspace).
//
// ".." is refused even where it would stay inside: a server resolves it
// through symbolic links (/workspace/link/.. is wherever link points),
// which no lexical check can see.
func (r Roots) Check(s string) (ok bool, why string) {
	switch {
	case hasControl(s):
		return false, "has a control character"
	case strings.ContainsRune(s, utf8.RuneError):
		return false, "has an invalid UTF-8 sequence or U+FFFD"
	case strings.HasPrefix(s, `\\`) || strings.HasPrefix(s, "//"):
		return false, `starts with two separators (a UNC or network path such as \\host\share or //host/share)`
	case drive.MatchString(s):
		return r.checkWindows(s)
	case strings.Contains(s, `\`):
		return false, "has a backslash, which a Windows server reads as a separator"
	case !strings.HasPrefix(s, "/"):
		return false, "is relative: write an absolute path"
	}
	segs := segments(strings.Split(s, "/"))
	clean := "/" + strings.Join(segs, "/")
	for _, seg := range segs {
		if seg == ".." {
			return false, dotdot(segs, "/", "/")
		}
	}
	for _, root := range r.Posix {
		if within(clean, root, "/") {
			return true, ""
		}
	}
	return false, "resolves to " + clean + ", which is outside every root"
}

func (r Roots) checkWindows(s string) (bool, string) {
	switch {
	case len(r.Windows) == 0:
		return false, "is a Windows path (drive letter), and no root is one"
	case !driveRooted.MatchString(s):
		return false, `is drive-relative (C:x): write the drive, a separator and the path, such as C:\x`
	case strings.Contains(s[2:], ":"):
		return false, "has a colon after the drive (an alternate data stream)"
	case winBad.MatchString(s):
		return false, `has a character Windows does not allow in a name (< > " | ? *)`
	}
	segs := segments(winSep.Split(s[3:], -1))
	head := strings.ToUpper(s[:1]) + `:\`
	for _, seg := range segs {
		if seg == ".." {
			return false, dotdot(segs, head, `\`)
		}
	}
	// every name for a trailing dot or space first, then for a device
	// (the order of the Rego form's else chain)
	for _, seg := range segs {
		if strings.HasSuffix(seg, ".") || strings.HasSuffix(seg, " ") {
			return false, "has a name ending in a dot or a space, which Windows strips"
		}
	}
	for _, seg := range segs {
		if winDevice.MatchString(seg) {
			return false, "names a Windows device (CON, NUL, COM1…)"
		}
	}
	clean := head + strings.Join(segs, `\`)
	for _, root := range r.Windows {
		if within(clean, root, `\`) {
			return true, ""
		}
	}
	return false, "resolves to " + clean + ", which is outside every root"
}

// segments drops the empty and "." segments.
func segments(parts []string) []string {
	out := parts[:0:0]
	for _, p := range parts {
		if p != "" && p != "." {
			out = append(out, p)
		}
	}
	return out
}

// within: clean is root or below root at a separator.
func within(clean, root, sep string) bool {
	return clean == root || strings.HasPrefix(clean, strings.TrimSuffix(root, sep)+sep)
}

// dotdot is the detail of a path with a ".." segment: where the path
// leads once every ".." takes away the segment before it (never above the
// top), as path.Clean resolves it; only the ".." for a path of more than
// maxResolve segments.
func dotdot(segs []string, head, sep string) string {
	const refused = `has a ".." segment, which is refused`
	if len(segs) > maxResolve {
		return refused
	}
	var kept []string
	for _, seg := range segs {
		switch {
		case seg != "..":
			kept = append(kept, seg)
		case len(kept) > 0:
			kept = kept[:len(kept)-1]
		}
	}
	return refused + "; it resolves to " + head + strings.Join(kept, sep)
}
