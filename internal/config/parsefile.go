package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/mcpx/mcpx-policy/internal/trust"
	"gopkg.in/yaml.v3"
)

// Every field of the structs a layer is made of declares, in its dir tag,
// how a change a later layer makes to it moves strictness (direction.go):
// the loosening warnings are made from these declarations, and
// TestEveryFieldDeclaresADirection fails on a field that declares none.

// origin is where something was written: file, line and config path.
type origin struct {
	file string `dir:"meta"`
	line int    `dir:"meta"`
	path string `dir:"meta"`
}

func (o origin) String() string {
	if o.line > 0 {
		return fmt.Sprintf("%s:%d", o.file, o.line)
	}
	return o.file
}

// setting is one scalar mode as a layer set it, already normalized.
type setting struct {
	value string `dir:"part"`
	at    origin `dir:"meta"`
}

type patRef struct {
	pat Pattern `dir:"part"`
	at  origin  `dir:"meta"`
}

// argRef is one argument name of an exemptArgs list.
type argRef struct {
	name string `dir:"part"`
	at   origin `dir:"meta"`
}

type unknownArgsRef struct {
	pat  Pattern `dir:"part"`
	mode string  `dir:"part"`
	at   origin  `dir:"meta"`
}

type overrideRef struct {
	path string `dir:"part"` // resolved against the declaring file's folder
	at   origin `dir:"meta"`
}

// ruleDef is one argument rule as written. A rule is added whole by one
// layer (its id is unique across the whole config), so a later layer
// changes none of its fields: each is part of the rule, and the rule list
// (scope.rules) declares the direction.
type ruleDef struct {
	id          string        `dir:"part"`
	description string        `dir:"part"`
	server      string        `dir:"meta"` // "" for a pool rule
	at          origin        `dir:"meta"` // the rule's mapping
	tools       []patRef      `dir:"part"`
	argument    []string      `dir:"part"`
	required    bool          `dir:"part"`
	schema      any           `dir:"part"`
	schemaAt    origin        `dir:"meta"` // the rule's schema: key
	schemaNode  *yaml.Node    `dir:"meta"` // the schema's value, to place errors inside it
	examples    []ruleExample `dir:"part"`
}

// ruleExample is one of a rule's examples: a value the rule must accept
// (valid) or refuse, an argument's value for a per-argument rule, else a
// whole arguments object.
type ruleExample struct {
	valid bool   `dir:"part"`
	value any    `dir:"part"`
	at    origin `dir:"meta"`
}

// scope is what the pool or one server holds in one layer (and, merged, in
// all layers). Its settings are checked in field order: the pinTools mode
// before the unknownArgsTools entries.
type scope struct {
	pinTools   *setting         `dir:"ordered" key:"pinTools"` // the pinTools mode, nil when unset
	hidden     []patRef         `dir:"tightens" key:"hiddenTools"`
	writeTools []patRef         `dir:"tightens" key:"writeTools"`
	rules      []*ruleDef       `dir:"tightens" key:"argumentRules"`
	ua         []unknownArgsRef `dir:"entries" key:"unknownArgsTools"`
	exemptArgs []argRef         `dir:"loosens" key:"exemptArgs" falls:"exemptArgs"`
	budgets    []*budgetDef     `dir:"tightens" key:"budgets"`
	loops      []*budgetDef     `dir:"tightens" key:"loopBreakers"`
	labels     []*labelDef      `dir:"tightens" key:"labels"`
	flows      []*flowDef       `dir:"tightens" key:"flows"`
}

// add appends o's lists to s; the pinTools mode is merged with the
// other scalar settings (merge).
func (s *scope) add(o scope) {
	s.hidden = append(s.hidden, o.hidden...)
	s.writeTools = append(s.writeTools, o.writeTools...)
	s.rules = append(s.rules, o.rules...)
	s.ua = append(s.ua, o.ua...)
	s.exemptArgs = append(s.exemptArgs, o.exemptArgs...)
	s.budgets = append(s.budgets, o.budgets...)
	s.loops = append(s.loops, o.loops...)
	s.labels = append(s.labels, o.labels...)
	s.flows = append(s.flows, o.flows...)
}

type serverLayer struct {
	name        string   `dir:"meta"`
	writePolicy *setting `dir:"ordered" key:"writePolicy"`
	unknownArgs *setting `dir:"ordered" key:"unknownArgs"`
	enforce     *setting `dir:"ordered" key:"enforce"`
	scope       `dir:"scope"`
}

// layer is one configuration source: a file, the environment or the flags.
type layer struct {
	source             string         `dir:"meta"`
	write              *setting       `dir:"ordered" key:"policy.write"`
	confirmDestructive *setting       `dir:"ordered" key:"policy.confirmDestructive"`
	unknownArgs        *setting       `dir:"ordered" key:"policy.unknownArgs"`
	enforce            *setting       `dir:"ordered" key:"policy.enforce"`
	exemptArgs         []argRef       `dir:"loosens" key:"policy.exemptArgs"`
	overrides          []overrideRef  `dir:"tightens" key:"policy.overrides"`
	pool               scope          `dir:"scope" key:"pool"`
	servers            []*serverLayer `dir:"each" key:"servers"`
	ledger             *ledgerDef     `dir:"any" key:"ledger"` // the ledger section, nil when absent
}

// find is the layer's server name; nil when the layer has none.
func (l *layer) find(name string) *serverLayer {
	for _, s := range l.servers {
		if s.name == name {
			return s
		}
	}
	return nil
}

// server is the layer's server name, added when the layer has none.
func (l *layer) server(name string) *serverLayer {
	if s := l.find(name); s != nil {
		return s
	}
	s := &serverLayer{name: name}
	l.servers = append(l.servers, s)
	return s
}

// The valid keys of each mapping, for strict checking and "did you mean".
var (
	topKeys             = []string{"version", "policy", "pool", "servers", "ledger"}
	policyKeys          = []string{"write", "confirmDestructive", "unknownArgs", "enforce", "exemptArgs", "overrides"}
	poolKeys            = []string{"hiddenTools", "writeTools", "argumentRules", "unknownArgsTools", "pinTools", "budgets", "loopBreakers", "labels", "flows"}
	serverKeys          = []string{"writePolicy", "hiddenTools", "writeTools", "unknownArgs", "enforce", "exemptArgs", "argumentRules", "unknownArgsTools", "pinTools", "budgets", "loopBreakers", "labels", "flows"}
	ruleKeys            = []string{"id", "description", "tools", "argument", "required", "schema", "examples"}
	unknownArgsToolKeys = []string{"tools", "mode"}
)

// exampleKeys are the keys of a rule's examples.
var exampleKeys = []string{"valid", "invalid"}

// fileParser reads one YAML file into a layer, reporting errors with the
// file's name and the node's line.
type fileParser struct {
	file  string
	c     *collector
	shape *shape // the document's sizes and heights, aliases expanded
}

func (p *fileParser) errAt(n *yaml.Node, path, format string, args ...any) {
	line := 0
	if n != nil {
		line = n.Line
	}
	p.c.add(p.file, line, path, format, args...)
}

func (p *fileParser) at(n *yaml.Node, path string) origin {
	return origin{file: p.file, line: n.Line, path: path}
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// parseFile reads and checks one configuration file. A missing or
// unreadable file, one past a limit (limits.go), bad YAML, a file without
// its version key (an empty or cut-off file) or a bad value is reported to
// c; the layer holds everything that was valid.
func parseFile(file string, c *collector) *layer {
	l := &layer{source: file}
	p := &fileParser{file: file, c: c}
	f, err := openTrusted(file, trust.Config)
	if err != nil {
		c.add(file, 0, "", "cannot read config file: %v", unwrapPathError(err))
		return l
	}
	b, ok := readLimited(file, f, c)
	f.Close()
	if !ok {
		return l
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			c.add(file, 0, "", "config file holds no settings (want at least version: 1; an empty or cut-off file is never loaded)")
			return l
		}
		p.yamlError(err, b)
		return l
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		p.errAt(&extra, "", "a config file holds one YAML document, found another")
	} else if !errors.Is(err, io.EOF) {
		p.yamlError(err, b)
	}
	shape, ok := p.checkShape(&doc)
	if !ok {
		return l
	}
	p.shape = shape
	if len(doc.Content) == 0 || isNull(doc.Content[0]) {
		c.add(file, 0, "", "config file holds no settings (want at least version: 1; an empty or cut-off file is never loaded)")
		return l
	}
	root := deref(doc.Content[0])
	if root.Kind != yaml.MappingNode {
		p.errAt(root, "", "want a mapping with keys %s, got %s", strings.Join(topKeys, ", "), kindName(root))
		return l
	}
	if !hasKey(root, "version") {
		p.errAt(root, "version", "config file has no version (every config file starts with version: 1; an empty or cut-off file is never loaded)")
	}
	for _, e := range p.entries(root, "") {
		switch e.key {
		case "version":
			v := deref(e.value)
			if v.Kind != yaml.ScalarNode || v.ShortTag() != "!!int" || v.Value != "1" {
				p.errAt(v, "version", "unsupported config version %s (want 1)", scalarText(v))
			}
		case "policy":
			p.policy(e.value, l)
		case "pool":
			p.scope(e.value, "pool", poolKeys, l, nil, "")
		case "servers":
			p.servers(e.value, l)
		case "ledger":
			p.ledger(e.value, l)
		default:
			p.unknownKey(e, "", topKeys)
		}
	}
	return l
}

func unwrapPathError(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// yamlError reports a YAML parse error at its line: the one the parser
// names, else (a character it refuses, which it names without a line) the
// line of the first character YAML does not allow in b, else the last.
func (p *fileParser) yamlError(err error, b []byte) {
	msg := err.Error()
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		p.c.add(p.file, line, "", "invalid YAML: %s", m[2])
		return
	}
	line := badCharLine(b)
	if line == 0 {
		line = 1 + bytes.Count(bytes.TrimRight(b, "\n"), []byte("\n"))
	}
	p.c.add(p.file, line, "", "invalid YAML: %s", strings.TrimPrefix(msg, "yaml: "))
}

// badCharLine is the 1-based line of the first character of b that YAML
// does not allow (invalid UTF-8, a control character other than tab, line
// feed and carriage return, a surrogate, U+FFFE, U+FFFF, a byte order mark
// after the start); 0 when there is none.
func badCharLine(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		ok := r != utf8.RuneError || n > 1
		switch {
		case r == '\t', r == '\n', r == '\r', r == 0x85:
		case r < 0x20, r == 0x7f, r >= 0x80 && r < 0xa0:
			ok = false
		case r >= 0xd800 && r <= 0xdfff, r == 0xfffe, r == 0xffff:
			ok = false
		case r == 0xfeff && i > 0:
			ok = false
		}
		if !ok {
			return 1 + bytes.Count(b[:i], []byte("\n"))
		}
		i += n
	}
	return 0
}

func scalarText(n *yaml.Node) string {
	if n.Kind == yaml.ScalarNode {
		if n.ShortTag() == "!!str" {
			return strconv.Quote(n.Value)
		}
		return n.Value
	}
	return kindName(n)
}

func (p *fileParser) unknownKey(e keyValue, path string, valid []string) {
	msg := fmt.Sprintf("unknown key %q", e.key)
	if near := nearest(e.key, valid); near != "" {
		msg += fmt.Sprintf(", did you mean %q?", near)
	}
	sorted := slices.Clone(valid)
	slices.Sort(sorted)
	msg += " (valid keys: " + strings.Join(sorted, ", ") + ")"
	p.errAt(e.kNode, join(path, e.key), "%s", msg)
}

// mapping checks that n is a mapping (or null, which is empty) and returns
// its entries.
func (p *fileParser) mapping(n *yaml.Node, path, what string) []keyValue {
	if isNull(n) {
		return nil
	}
	n = deref(n)
	if n.Kind != yaml.MappingNode {
		p.errAt(n, path, "want %s, got %s", what, kindName(n))
		return nil
	}
	return p.entries(n, path)
}

func (p *fileParser) policy(n *yaml.Node, l *layer) {
	for _, e := range p.mapping(n, "policy", "a mapping") {
		path := join("policy", e.key)
		if d := scalarIn("policy", e.key); d != nil {
			d.set(l, "", p.scalar(d.kind, e.value, path))
			continue
		}
		switch e.key {
		case "exemptArgs":
			for i, s := range p.strings(e.value, path, "argument names") {
				l.exemptArgs = append(l.exemptArgs, argRef{name: s.Value, at: p.at(s, index(path, i))})
			}
		case "overrides":
			for i, s := range p.strings(e.value, path, "Rego files or folders") {
				target := s.Value
				if !filepath.IsAbs(target) {
					target = filepath.Join(filepath.Dir(p.file), target)
				}
				l.overrides = append(l.overrides, overrideRef{path: target, at: p.at(s, index(path, i))})
			}
		default:
			p.unknownKey(e, "policy", policyKeys)
		}
	}
}

func (p *fileParser) servers(n *yaml.Node, l *layer) {
	for _, e := range p.mapping(n, "servers", "a mapping of server names") {
		if e.key == "" {
			p.errAt(e.kNode, "servers", "empty server name")
			continue
		}
		p.scope(e.value, join("servers", e.key), serverKeys, l, l.server(e.key), e.key)
	}
}

// scope reads the pool of l (srv nil) or one server of l.
func (p *fileParser) scope(n *yaml.Node, path string, keys []string, l *layer, srv *serverLayer, server string) {
	sc, table := &l.pool, "pool"
	if srv != nil {
		sc, table = &srv.scope, "servers"
	}
	for _, e := range p.mapping(n, path, "a mapping") {
		kp := join(path, e.key)
		if !slices.Contains(keys, e.key) {
			p.unknownKey(e, path, keys)
			continue
		}
		if d := scalarIn(table, e.key); d != nil {
			d.set(l, server, p.scalar(d.kind, e.value, kp))
			continue
		}
		switch e.key {
		case "exemptArgs":
			for i, s := range p.strings(e.value, kp, "argument names") {
				sc.exemptArgs = append(sc.exemptArgs, argRef{name: s.Value, at: p.at(s, index(kp, i))})
			}
		case "hiddenTools":
			sc.hidden = append(sc.hidden, p.patterns(e.value, kp)...)
		case "writeTools":
			sc.writeTools = append(sc.writeTools, p.patterns(e.value, kp)...)
		case "argumentRules":
			sc.rules = append(sc.rules, p.rules(e.value, kp, server)...)
		case "unknownArgsTools":
			sc.ua = append(sc.ua, p.unknownArgsTools(e.value, kp)...)
		case "budgets":
			sc.budgets = append(sc.budgets, p.budgets(e.value, kp, false)...)
		case "loopBreakers":
			sc.loops = append(sc.loops, p.budgets(e.value, kp, true)...)
		case "labels":
			sc.labels = append(sc.labels, p.labels(e.value, kp)...)
		case "flows":
			sc.flows = append(sc.flows, p.flows(e.value, kp)...)
		}
	}
}

// scalar reads one setting of the table (settings.go): a mode as a
// scalar in one of its spellings, a flag as a YAML boolean.
func (p *fileParser) scalar(k *settingKind, n *yaml.Node, path string) *setting {
	if k.modes == "" {
		return p.boolean(n, path)
	}
	return p.mode(n, path, k.modes, k.normalize, k.bad)
}

// mode reads one mode scalar: normalize maps its spellings to the canonical
// mode, bad words the error for a value that is none of them.
func (p *fileParser) mode(n *yaml.Node, path, modes string, normalize func(string) (string, bool), bad func(string) string) *setting {
	n = deref(n)
	if n.Kind != yaml.ScalarNode {
		p.errAt(n, path, "want a mode (%s), got %s", modes, kindName(n))
		return nil
	}
	v, ok := normalize(n.Value)
	if !ok {
		p.errAt(n, path, "%s", bad(n.Value))
		return nil
	}
	return &setting{value: v, at: p.at(n, path)}
}

func (p *fileParser) boolean(n *yaml.Node, path string) *setting {
	n = deref(n)
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" {
		p.errAt(n, path, "want true or false, got %s", kindName(n))
		return nil
	}
	return &setting{value: strconv.FormatBool(strings.EqualFold(n.Value, "true")), at: p.at(n, path)}
}

// strings reads a list of non-empty strings; null is the empty list.
func (p *fileParser) strings(n *yaml.Node, path, what string) []*yaml.Node {
	if isNull(n) {
		return nil
	}
	n = deref(n)
	if n.Kind != yaml.SequenceNode {
		p.errAt(n, path, "want a list of %s, got %s", what, kindName(n))
		return nil
	}
	var out []*yaml.Node
	for i, c := range n.Content {
		c = deref(c)
		switch {
		case c.Kind != yaml.ScalarNode || c.ShortTag() != "!!str":
			p.errAt(c, index(path, i), "want a string, got %s", kindName(c))
		case c.Value == "":
			p.errAt(c, index(path, i), "empty string")
		default:
			out = append(out, c)
		}
	}
	return out
}

func (p *fileParser) patterns(n *yaml.Node, path string) []patRef {
	var out []patRef
	for ip, c := range p.items(n, path, "a list of tool patterns") {
		if c.Kind != yaml.ScalarNode || c.ShortTag() != "!!str" {
			p.errAt(c, ip, "want a tool pattern (a string), got %s", kindName(c))
			continue
		}
		pat, err := ParsePattern(c.Value)
		if err != nil {
			p.errAt(c, ip, "%v", err)
			continue
		}
		out = append(out, patRef{pat: pat, at: p.at(c, ip)})
	}
	return out
}

func (p *fileParser) unknownArgsTools(n *yaml.Node, path string) []unknownArgsRef {
	var out []unknownArgsRef
	for ip, c := range p.items(n, path, "a list of {tools, mode} entries") {
		if c.Kind != yaml.MappingNode {
			p.errAt(c, ip, "want a mapping with keys tools and mode, got %s", kindName(c))
			continue
		}
		var pats []patRef
		var mode *setting
		var toolsNode *yaml.Node
		for _, e := range p.entries(c, ip) {
			switch e.key {
			case "tools":
				toolsNode = deref(e.value)
				pats = p.patterns(e.value, join(ip, "tools"))
			case "mode":
				mode = p.scalar(kindUnknownArgs, e.value, join(ip, "mode"))
				if mode == nil {
					mode = &setting{} // reported already
				}
			default:
				p.unknownKey(e, ip, unknownArgsToolKeys)
			}
		}
		if toolsNode == nil || isNull(toolsNode) || (toolsNode.Kind == yaml.SequenceNode && len(toolsNode.Content) == 0) {
			p.errAt(c, ip, "entry has no tools (want a list of tool patterns)")
		}
		if mode == nil {
			p.errAt(c, ip, "entry has no mode (want warn, reject or off)")
			continue
		}
		if mode.value == "" {
			continue
		}
		for _, pr := range pats {
			out = append(out, unknownArgsRef{pat: pr.pat, mode: mode.value, at: pr.at})
		}
	}
	return out
}
