package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	"gopkg.in/yaml.v3"

	"github.com/mcpx/mcpx-policy/internal/trust"
)

// Limits of one config file, so that a hostile or broken file (an alias
// bomb, a file of hundreds of megabytes, nesting thousands of levels deep)
// is a load error with file and line instead of a process that runs out
// of memory or time. Each is far above what a real config needs: the
// 2,000-rule L workload of internal/bench is a 494 KiB file without
// aliases, nesting 10 levels, whose schemas nest at most 5
// (docs/configuration.md, "Limits").
const (
	// MaxFileSize is the largest config file, in bytes (2 MiB).
	MaxFileSize = 2 << 20
	// MaxAliasNodes caps what YAML aliases add to one file: the nodes every
	// alias stands for, counted with the aliases inside them expanded.
	MaxAliasNodes = 100_000
	// MaxDepth is the deepest nesting of mappings and lists in a file,
	// aliases expanded; the document's top mapping is level 1.
	MaxDepth = 100
	// MaxSchemaDepth is the deepest nesting of mappings and lists in one
	// rule's schema, aliases expanded; the schema's own mapping is level 1.
	MaxSchemaDepth = 64
	// MaxCatalogSize is the largest tool catalog file, in bytes (32 MiB):
	// tools/list answers with long descriptions are bigger than configs.
	MaxCatalogSize = 32 << 20
)

// tooLarge reads at most limit bytes of r. When there is more, it returns
// the 1-based line that goes past the limit.
func tooLarge(r io.Reader, limit int) (b []byte, line int, err error) {
	b, err = io.ReadAll(io.LimitReader(r, int64(limit)+1))
	if err != nil || len(b) <= limit {
		return b, 0, err
	}
	return nil, 1 + bytes.Count(b[:limit], []byte("\n")), nil
}

// readFileLimited reads a whole file an operator trusts, of at most limit
// bytes, once its owner and mode pass (openTrusted).
func readFileLimited(name string, limit int) ([]byte, int, error) {
	f, err := openTrusted(name, trust.Config)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	return tooLarge(f, limit)
}

// openTrusted opens a file the operator trusts: a regular file that only
// its owner (this process's user, or root) may write, and with
// trust.Secret that no other user may read (trust.OpenTrusted). A
// refusal's error carries what to do about it.
func openTrusted(name string, want trust.Trust) (*os.File, error) {
	f, err := trust.OpenTrusted(name, want)
	var se *trust.Error
	if errors.As(err, &se) && se.Hint != "" {
		return nil, fmt.Errorf("%w (%s)", se, se.Hint)
	}
	return f, err
}

// readLimited reads at most MaxFileSize bytes of r. A larger file is
// reported at the line that goes past the limit, and nothing of it is
// returned.
func readLimited(file string, r io.Reader, c *collector) ([]byte, bool) {
	b, line, err := tooLarge(r, MaxFileSize)
	if err != nil {
		c.add(file, 0, "", "cannot read config file: %v", unwrapPathError(err))
		return nil, false
	}
	if line > 0 {
		c.add(file, line, "", "config file is larger than the limit of %d bytes (2 MiB) for one file; this line goes past it (split the config into conf.d/*.yaml files)", MaxFileSize)
		return nil, false
	}
	return b, true
}

// shape measures a parsed YAML document with its aliases expanded, in time
// and memory proportional to the document as written: each node's expanded
// size and height are computed once.
type shape struct {
	size    map[*yaml.Node]int // nodes, aliases expanded
	height  map[*yaml.Node]int // levels of mappings and lists, aliases expanded
	pending map[*yaml.Node]bool
	cycle   *yaml.Node // an alias inside the node it names
}

func newShape() *shape {
	return &shape{size: map[*yaml.Node]int{}, height: map[*yaml.Node]int{}, pending: map[*yaml.Node]bool{}}
}

// sizeCap stops counting once a size is past every limit, so sums stay
// far from overflow whatever the document.
const sizeCap = 1 << 40

// measure fills size and height for n and everything under it.
func (s *shape) measure(n *yaml.Node) (size, height int) {
	if n == nil {
		return 0, 0
	}
	if sz, ok := s.size[n]; ok {
		return sz, s.height[n]
	}
	if s.pending[n] {
		if s.cycle == nil {
			s.cycle = n
		}
		return 0, 0
	}
	s.pending[n] = true
	switch n.Kind {
	case yaml.AliasNode:
		size, height = s.measure(n.Alias)
	case yaml.MappingNode, yaml.SequenceNode, yaml.DocumentNode:
		size = 1
		for _, c := range n.Content {
			cs, ch := s.measure(c)
			size = min(size+cs, sizeCap)
			height = max(height, ch)
		}
		if n.Kind != yaml.DocumentNode {
			height++
		}
	default:
		size = 1
	}
	delete(s.pending, n)
	s.size[n], s.height[n] = size, height
	return size, height
}

// deepest follows the tallest branch under n down to the node at level
// limit+1, the first one past the limit, for its line.
func (s *shape) deepest(n *yaml.Node, limit int) *yaml.Node {
	level := 0
	for {
		n = deref(n)
		if n.Kind == yaml.MappingNode || n.Kind == yaml.SequenceNode {
			level++
		}
		if level > limit {
			return n
		}
		var next *yaml.Node
		for _, c := range n.Content {
			if next == nil || s.height[c] > s.height[next] {
				next = c
			}
		}
		if next == nil {
			return n
		}
		n = next
	}
}

// checkShape reports a document that refers to itself through an alias,
// whose aliases expand past MaxAliasNodes, or that nests deeper than
// MaxDepth. When it reports one, nothing else of the file is read.
func (p *fileParser) checkShape(doc *yaml.Node) (*shape, bool) {
	s := newShape()
	_, height := s.measure(doc)
	if s.cycle != nil {
		p.errAt(s.cycle, "", "YAML alias *%s refers to a node that contains it", aliasName(s.cycle))
		return s, false
	}
	// What the aliases add: every alias of the document as written (not
	// those inside an alias's target, whose expansion that target's size
	// already counts) stands for its target's expanded size.
	added := 0
	var bad *yaml.Node
	var walk func(n *yaml.Node)
	walk = func(n *yaml.Node) {
		if bad != nil || n == nil {
			return
		}
		if n.Kind == yaml.AliasNode {
			added = min(added+s.size[n.Alias], sizeCap)
			if added > MaxAliasNodes {
				bad = n
			}
			return
		}
		for _, c := range n.Content {
			walk(c)
		}
	}
	walk(doc)
	if bad != nil {
		p.errAt(bad, "", "YAML aliases expand to more than %d nodes (the limit for one file; this alias *%s goes past it)", MaxAliasNodes, bad.Value)
		return s, false
	}
	if height > MaxDepth {
		n := s.deepest(doc, MaxDepth)
		p.errAt(n, "", "mappings and lists nest deeper than %d levels (the limit for one file, aliases expanded)", MaxDepth)
		return s, false
	}
	return s, true
}

func aliasName(n *yaml.Node) string {
	if n.Kind == yaml.AliasNode {
		return n.Value
	}
	return n.Anchor
}

// schemaTooDeep reports a rule's schema that nests deeper than
// MaxSchemaDepth, at the first node past the limit.
func (p *fileParser) schemaTooDeep(schema *yaml.Node, path string) bool {
	return p.tooDeep(schema, path, "schema", "one rule's schema")
}

// tooDeep reports a value (what, for the message) that nests deeper than
// MaxSchemaDepth, at the first node past the limit; limit names the cap.
func (p *fileParser) tooDeep(n *yaml.Node, path, what, limit string) bool {
	if p.shape == nil {
		return false
	}
	if _, h := p.shape.measure(n); h <= MaxSchemaDepth {
		return false
	}
	deep := p.shape.deepest(n, MaxSchemaDepth)
	p.errAt(deep, path, "%s nests deeper than %d levels of mappings and lists (the limit for %s, aliases expanded)", what, MaxSchemaDepth, limit)
	return true
}
