package pgstate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mcpx/mcpx-policy/decision"
	"github.com/mcpx/mcpx-policy/internal/pins"
)

// Pins is the pin store in the database (pins.Backend): one row per
// server and tool in mcpx_pins, each definition as the JSON of a
// decision.PinnedDefinition (hashes and hints, never a description or a
// schema). Safe for concurrent use; any number of them, in any processes
// on any machines, share the table.
type Pins struct {
	db  *DB
	now func() time.Time
}

// Pins returns the pin store of d; now is its clock (nil: time.Now).
func (d *DB) Pins(now func() time.Time) *Pins {
	if now == nil {
		now = time.Now
	}
	return &Pins{db: d, now: now}
}

// Where names the database without its password, and the table.
func (p *Pins) Where() string { return p.db.where + " (mcpx_pins)" }

func (p *Pins) run(fn func(ctx context.Context, tx pgx.Tx, now time.Time) error) error {
	now := p.now().UTC().Truncate(time.Microsecond)
	return p.db.run("pins", "pin store", pins.ErrNewerVersion, func(ctx context.Context, tx pgx.Tx) error {
		return fn(ctx, tx, now)
	})
}

var hexSum = regexp.MustCompile(`^[0-9a-f]{64}$`)

// decodeDefinition reads a definition as stored, strictly: a row that does
// not read makes the store unreadable (its calls are refused), never a
// pin that passes.
func decodeDefinition(b string) (pins.Definition, error) {
	var d pins.Definition
	dec := json.NewDecoder(bytes.NewReader([]byte(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&d); err != nil {
		return d, err
	}
	if !hexSum.MatchString(d.SHA256) {
		return d, fmt.Errorf("sha256 %q is not 64 hex digits", d.SHA256)
	}
	for k, v := range d.Fields {
		if !slices.Contains(decision.DefinitionFields, k) || !hexSum.MatchString(v) {
			return d, fmt.Errorf("fields: %q: %q is not a field's 64 hex digits", k, v)
		}
	}
	if d.Fields == nil {
		d.Fields = map[string]string{}
	}
	return d, nil
}

func scanPin(row pgx.Row) (pins.Pin, error) {
	var pin pins.Pin
	var pinned string
	var pending *string
	var accepted *time.Time
	if err := row.Scan(&pin.Server, &pin.Tool, &pinned, &pending, &accepted); err != nil {
		return pin, err
	}
	var err error
	if pin.Pinned, err = decodeDefinition(pinned); err != nil {
		return pin, fmt.Errorf("mcpx_pins %s.%s: pinned: %w", pin.Server, pin.Tool, err)
	}
	if pending != nil {
		d, err := decodeDefinition(*pending)
		if err != nil {
			return pin, fmt.Errorf("mcpx_pins %s.%s: pending: %w", pin.Server, pin.Tool, err)
		}
		pin.Pending = &d
	}
	if accepted != nil {
		pin.Accepted = accepted.UTC()
	}
	return pin, nil
}

func encodeDefinition(d *pins.Definition) (*string, error) {
	if d == nil {
		return nil, nil
	}
	b, err := json.Marshal(d)
	if err != nil {
		return nil, err
	}
	s := string(b)
	return &s, nil
}

const pinCols = "server, tool, pinned, pending, accepted"

// statusOf is See's answer for pin when it needs no change, and whether it
// needs none.
func statusOf(pin pins.Pin, d pins.Seen) (pins.Status, bool) {
	switch {
	case pin.Pinned.SHA256 == d.SHA256 && pin.Pending == nil:
		return pins.Status{State: pins.OK, Pin: pin}, true
	case pin.Pinned.SHA256 != d.SHA256 && pin.Pending != nil && pin.Pending.SHA256 == d.SHA256:
		return pins.ChangedStatus(pin), true
	}
	return pins.Status{}, false
}

// See: see pins.Backend. A definition that changes nothing costs one
// read; a first sight takes a transaction-level advisory lock, so that of
// gateways seeing a tool first at once exactly one pins it.
func (p *Pins) See(server string, d pins.Seen) (pins.Status, error) {
	if err := pins.CheckSeen(server, d); err != nil {
		return pins.Status{}, err
	}
	read := func(ctx context.Context, q querier, lock string) (pins.Pin, bool, error) {
		pin, err := scanPin(q.QueryRow(ctx, "SELECT "+pinCols+" FROM mcpx_pins WHERE server = $1 AND tool = $2"+lock, server, d.Tool))
		if errors.Is(err, pgx.ErrNoRows) {
			return pin, false, nil
		}
		return pin, err == nil, err
	}
	var out pins.Status
	var done, first bool
	err := p.db.read("pins", "pin store", pins.ErrNewerVersion, func(ctx context.Context, q querier) error {
		pin, found, err := read(ctx, q, "")
		if found {
			out, done = statusOf(pin, d)
		}
		first = !found
		return err
	})
	if err != nil || done {
		return out, err
	}
	var outcome error
	err = p.run(func(ctx context.Context, tx pgx.Tx, now time.Time) error {
		outcome = nil
		if first {
			if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1::integer, 0)", classPins); err != nil {
				return err
			}
		}
		pin, found, err := read(ctx, tx, " FOR UPDATE")
		if err != nil {
			return err
		}
		if !found && !first {
			// Gone since the first read (a table emptied by hand): pin
			// it as a first sight, one at a time.
			if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1::integer, 0)", classPins); err != nil {
				return err
			}
			if pin, found, err = read(ctx, tx, " FOR UPDATE"); err != nil {
				return err
			}
		}
		if !found {
			var n int
			if err := tx.QueryRow(ctx, "SELECT count(*) FROM mcpx_pins").Scan(&n); err != nil {
				return err
			}
			if n >= pins.MaxPins {
				outcome = fmt.Errorf("%w: %d, the most a store keeps", pins.ErrFull, pins.MaxPins)
				return nil
			}
			def := pins.DefinitionOf(d, now)
			js, err := encodeDefinition(&def)
			if err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, "INSERT INTO mcpx_pins (server, tool, pinned) VALUES ($1, $2, $3)", server, d.Tool, *js); err != nil {
				return err
			}
			out = pins.Status{State: pins.New, Pin: pins.Pin{Server: server, Tool: d.Tool, Pinned: def}}
			return nil
		}
		switch {
		case pin.Pinned.SHA256 == d.SHA256:
			changed := pin.Pending != nil
			pin.Pending = nil
			out = pins.Status{State: pins.OK, Pin: pin}
			if !changed {
				return nil
			}
		case pin.Pending != nil && pin.Pending.SHA256 == d.SHA256:
			out = pins.ChangedStatus(pin)
			return nil
		default:
			def := pins.DefinitionOf(d, now)
			pin.Pending = &def
			out = pins.ChangedStatus(pin)
		}
		js, err := encodeDefinition(pin.Pending)
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, "UPDATE mcpx_pins SET pending = $3 WHERE server = $1 AND tool = $2", server, d.Tool, js)
		return err
	})
	if err != nil {
		return pins.Status{}, err
	}
	if outcome != nil {
		return pins.Status{}, outcome
	}
	return out, nil
}

// Accept: see pins.Backend.
func (p *Pins) Accept(server, tool, sha256 string) (pins.Pin, error) {
	var out pins.Pin
	var outcome error
	err := p.run(func(ctx context.Context, tx pgx.Tx, now time.Time) error {
		outcome = nil
		pin, err := scanPin(tx.QueryRow(ctx, "SELECT "+pinCols+" FROM mcpx_pins WHERE server = $1 AND tool = $2 FOR UPDATE", server, tool))
		if errors.Is(err, pgx.ErrNoRows) {
			outcome = fmt.Errorf("%w: %s.%s", pins.ErrNotFound, server, tool)
			return nil
		}
		if err != nil {
			return err
		}
		out = pin
		switch {
		case sha256 != "" && pin.Pending == nil && pin.Pinned.SHA256 == sha256:
			return nil
		case pin.Pending == nil:
			outcome = fmt.Errorf("%w: %s.%s is pinned to %s, the definition last seen", pins.ErrNothingPending, server, tool, pin.Pinned.SHA256)
			return nil
		case sha256 != "" && pin.Pending.SHA256 != sha256:
			outcome = fmt.Errorf("%w: %s.%s's changed definition is now %s, not %s", pins.ErrMismatch, server, tool, pin.Pending.SHA256, sha256)
			return nil
		}
		pin.Pinned, pin.Pending, pin.Accepted = *pin.Pending, nil, now
		out = pin
		js, err := encodeDefinition(&pin.Pinned)
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, "UPDATE mcpx_pins SET pinned = $3, pending = NULL, accepted = $4 WHERE server = $1 AND tool = $2", server, tool, *js, now)
		return err
	})
	if err != nil {
		return pins.Pin{}, err
	}
	if outcome != nil {
		return pins.Pin{}, outcome
	}
	return out, nil
}

// List: see pins.Backend.
func (p *Pins) List() ([]pins.Pin, error) {
	var out []pins.Pin
	err := p.db.read("pins", "pin store", pins.ErrNewerVersion, func(ctx context.Context, q querier) error {
		rows, err := q.Query(ctx, "SELECT "+pinCols+" FROM mcpx_pins ORDER BY server, tool")
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (pins.Pin, error) { return scanPin(r) })
		return err
	})
	if err != nil {
		return nil, err
	}
	if out == nil {
		out = []pins.Pin{}
	}
	return out, nil
}
