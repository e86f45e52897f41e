package statedir

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// DecodeVersioned parses a state file of the form {"version": N, …}
// strictly into v: the file must not be empty, must be JSON with a
// "version" that is this build's (version), and must have no field v does
// not know. A file a newer build wrote is an error errors.Is matches to
// errNewer. Each failure is the cause of the store's unreadable-file
// error: the caller must neither use nor overwrite the file.
func DecodeVersioned(b []byte, version int, errNewer error, v any) error {
	if _, err := CheckVersion(b, version, errNewer); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// CheckVersion checks the head of a state file of the form {"version": N,
// …} — not empty, a JSON object, a "version" that is this build's — and
// returns the file's top-level members for a store that reads them itself
// (the ledger keeps the members it does not know). A file a newer build
// wrote is an error errors.Is matches to errNewer. Each failure is the
// cause of the store's unreadable-file error.
func CheckVersion(b []byte, version int, errNewer error) (map[string]json.RawMessage, error) {
	if len(bytes.TrimSpace(b)) == 0 {
		return nil, errors.New("the file is empty")
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, fmt.Errorf("not valid json: %w", err)
	}
	v, ok := raw["version"]
	if !ok {
		return nil, errors.New("no version field")
	}
	var n int
	if err := json.Unmarshal(v, &n); err != nil {
		return nil, fmt.Errorf("version: %w", err)
	}
	switch {
	case n > version:
		return nil, fmt.Errorf("%w: file version %d, this build reads version %d", errNewer, n, version)
	case n != version:
		return nil, fmt.Errorf("unsupported file version %d", n)
	}
	return raw, nil
}
