package render

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// invisible reports whether r cannot be shown as itself in a prompt: a
// person could not see it, or could not tell it from another character.
// These are escaped visibly (visible): control characters (C0, DEL, C1),
// format characters (bidirectional controls such as U+202E, zero-width
// characters such as U+200B, U+FEFF, tag characters), line and paragraph
// separators, private-use and unassigned code points, every space but
// U+0020, variation selectors and the other default-ignorable code points
// (U+034F, the Hangul fillers), and U+FFFD (what an invalid byte reads as).
func invisible(r rune) bool {
	switch {
	case r == ' ':
		return false
	case r < utf8.RuneSelf:
		return r < 0x20 || r == 0x7f
	case r == utf8.RuneError:
		return true
	case !unicode.IsGraphic(r): // Cc, Cf, Co, Cs, Cn, Zl, Zp
		return true
	}
	return unicode.Is(unicode.Zs, r) || unicode.Is(unicode.Variation_Selector, r) ||
		unicode.Is(unicode.Other_Default_Ignorable_Code_Point, r)
}

// visible returns s with every invisible character written as a JSON
// escape: \n, \r and \t by name, others \uXXXX (lower-case hex; a
// surrogate pair above U+FFFF). Inside JSON text the result is the same
// JSON value. Every other character, backslashes included, stays as it is.
func visible(s string) string {
	i := strings.IndexFunc(s, invisible)
	if i < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	b.WriteString(s[:i])
	for _, r := range s[i:] {
		if !invisible(r) {
			b.WriteRune(r)
			continue
		}
		writeEscape(&b, r)
	}
	return b.String()
}

func writeEscape(b *strings.Builder, r rune) {
	switch r {
	case '\n':
		b.WriteString(`\n`)
	case '\r':
		b.WriteString(`\r`)
	case '\t':
		b.WriteString(`\t`)
	default:
		if r > 0xffff {
			r -= 0x10000
			fmt.Fprintf(b, `\u%04x\u%04x`, 0xd800+(r>>10), 0xdc00+(r&0x3ff))
			return
		}
		fmt.Fprintf(b, `\u%04x`, r)
	}
}

// shownName is a server or tool name as a prompt shows it: as it is when
// it holds only ASCII letters, digits and _ . - : / @ +, else as a JSON
// string with its invisible characters escaped, so that no name can pass
// for another or for the text around it.
func shownName(s string) string {
	plain := s != ""
	for i := 0; i < len(s) && plain; i++ {
		c := s[i]
		plain = c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("_.-:/@+", c) >= 0
	}
	if plain {
		return s
	}
	return visible(jsonText(s))
}
