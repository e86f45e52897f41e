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
	if len(bytes.TrimSpace(b)) == 0 {
		return errors.New("the file is empty")
	}
	var head struct {
		Version *int `json:"version"`
	}
	if err := json.Unmarshal(b, &head); err != nil {
		return fmt.Errorf("not valid json: %w", err)
	}
	switch {
	case head.Version == nil:
		return errors.New("no version field")
	case *head.Version > version:
		return fmt.Errorf("%w: file version %d, this build reads version %d", errNewer, *head.Version, version)
	case *head.Version != version:
		return fmt.Errorf("unsupported file version %d", *head.Version)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}
