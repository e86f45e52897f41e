package schemarego

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf16"
)

// fixQuotes rewrites the escapes that OPA's printer takes from Go's
// strconv.Quote but Rego's scanner does not accept (\a, \v, \xNN,
// \UNNNNNNNN) into JSON \u escapes, inside double-quoted string literals
// only. The result is parsed again and compared with the AST by module(),
// so a mistake here is an error, never a changed value.
func fixQuotes(src string) string {
	if !strings.Contains(src, `\`) {
		return src
	}
	var b strings.Builder
	inStr, inRaw := false, false
	for i := 0; i < len(src); i++ {
		c := src[i]
		switch {
		case inRaw:
			if c == '`' {
				inRaw = false
			}
		case !inStr && c == '`':
			inRaw = true
		case !inStr && c == '"':
			inStr = true
		case inStr && c == '"':
			inStr = false
		case inStr && c == '\\' && i+1 < len(src):
			n := src[i+1]
			switch n {
			case 'a':
				b.WriteString(`\u0007`)
				i++
				continue
			case 'v':
				b.WriteString(`\u000b`)
				i++
				continue
			case 'x':
				if i+3 < len(src) {
					b.WriteString(`\u00` + src[i+2:i+4])
					i += 3
					continue
				}
			case 'U':
				if i+9 < len(src) {
					if r, err := strconv.ParseUint(src[i+2:i+10], 16, 32); err == nil {
						if r > 0xFFFF {
							r1, r2 := utf16.EncodeRune(rune(r))
							fmt.Fprintf(&b, `\u%04x\u%04x`, r1, r2)
						} else {
							fmt.Fprintf(&b, `\u%04x`, r)
						}
						i += 9
						continue
					}
				}
			}
			b.WriteByte(c)
			b.WriteByte(n)
			i++
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}
