package decision

// DefinitionFields are the top-level fields of a tool's definition that its
// pin covers, in the order a report names them.
var DefinitionFields = []string{"name", "description", "inputSchema", "outputSchema", "annotations"}

// Definition is the part of a tool's definition its pin covers: name,
// description, inputSchema, outputSchema and annotations (the hints and
// title this package reads), each left out when the tool has none. A
// description "" counts as none; an empty inputSchema or annotations
// object is one.
func Definition(t Tool) map[string]any {
	d := map[string]any{"name": t.Name}
	if t.Description != "" {
		d["description"] = t.Description
	}
	if t.InputSchema != nil {
		d["inputSchema"] = t.InputSchema
	}
	if t.OutputSchema != nil {
		d["outputSchema"] = t.OutputSchema
	}
	if a := t.Annotations; a != nil {
		ann := map[string]any{}
		if a.Title != "" {
			ann["title"] = a.Title
		}
		for _, h := range []struct {
			key string
			v   *bool
		}{{"readOnlyHint", a.ReadOnlyHint}, {"destructiveHint", a.DestructiveHint}, {"idempotentHint", a.IdempotentHint}, {"openWorldHint", a.OpenWorldHint}} {
			if h.v != nil {
				ann[h.key] = *h.v
			}
		}
		d["annotations"] = ann
	}
	return d
}

// ToolSHA256 is the hex SHA-256 of the tool's Definition in RFC 8785
// canonical JSON — its pin — and, by field of DefinitionFields, the hex
// SHA-256 of each field's canonical value ("" for a field the tool does not
// have), which tells two definitions' differing fields apart without
// keeping either. A schema that is not JSON (a number beyond a double's
// range) is an error.
func ToolSHA256(t Tool) (sum string, fields map[string]string, err error) {
	d := Definition(t)
	b, err := Canonical(d)
	if err != nil {
		return "", nil, err
	}
	fields = make(map[string]string, len(DefinitionFields))
	for _, f := range DefinitionFields {
		v, ok := d[f]
		if !ok {
			fields[f] = ""
			continue
		}
		fb, err := Canonical(v)
		if err != nil {
			return "", nil, err
		}
		fields[f] = SHA256Hex(fb)
	}
	return SHA256Hex(b), fields, nil
}

// ChangedFields lists, in DefinitionFields order, the fields whose hashes
// differ between two ToolSHA256 field maps.
func ChangedFields(pinned, now map[string]string) []string {
	var out []string
	for _, f := range DefinitionFields {
		if pinned[f] != now[f] {
			out = append(out, f)
		}
	}
	return out
}
