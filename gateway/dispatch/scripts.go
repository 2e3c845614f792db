package dispatch

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/axpool/axpool/scripts"
	"github.com/axpool/axpool/tools"
	"github.com/axpool/axpool/wire"
)

// Scripts holds the named scripts calls may name (docs/scripts.md): the
// current catalogue, which a reload replaces (Store) while calls in
// flight keep the one they started with (their job carries the source),
// and the destructive (`confirm`) scripts the operator allows. A nil
// *Scripts has no script. Safe for concurrent use.
type Scripts struct {
	mu      sync.RWMutex
	cat     *scripts.Catalogue
	allowed map[string]bool
}

// NewScripts returns the scripts of cat, the destructive ones allowed by
// name (--allow-destructive).
func NewScripts(cat *scripts.Catalogue, allowDestructive []string) *Scripts {
	s := &Scripts{cat: cat, allowed: map[string]bool{}}
	for _, n := range allowDestructive {
		s.allowed[n] = true
	}
	return s
}

// Catalogue returns the current catalogue (nil for a nil s).
func (s *Scripts) Catalogue() *scripts.Catalogue {
	if s == nil {
		return nil
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.cat
}

// Store makes cat the current catalogue.
func (s *Scripts) Store(cat *scripts.Catalogue) {
	s.mu.Lock()
	s.cat = cat
	s.mu.Unlock()
}

// Lookup returns the public script called name in the current catalogue,
// with that catalogue.
func (s *Scripts) Lookup(name string) (*scripts.Script, *scripts.Catalogue, bool) {
	cat := s.Catalogue()
	if cat == nil {
		return nil, nil, false
	}
	sc, ok := cat.Lookup(name)
	return sc, cat, ok
}

// IsScript reports whether name is a public script now (false for a nil
// s).
func (s *Scripts) IsScript(name string) bool {
	_, _, ok := s.Lookup(name)
	return ok
}

// Caller returns the scripts.Caller of cat, running its jobs on the
// dispatcher's Backend.
func (d *Dispatcher) Caller(cat *scripts.Catalogue) *scripts.Caller {
	return &scripts.Caller{Catalogue: cat, Allowed: d.cfg.Scripts.allowed,
		Run: func(ctx context.Context, job json.RawMessage, progress func(steps, total int64)) (json.RawMessage, error) {
			return d.cfg.Backend.Run(ctx, tools.Opaque(scripts.JobKind, job), progress)
		}}
}

// Script answers a call of script s (of the catalogue cat) with arguments
// raw: its result object, unmasked, and the arguments it ran with (raw
// when it was refused). Refusals and results alike are tool results,
// with the job fields; a Backend failure is its envelope (Failure) with
// the script's fields. progress, when set, receives the job's steps.
func (d *Dispatcher) Script(ctx context.Context, s *scripts.Script, cat *scripts.Catalogue, raw json.RawMessage,
	progress func(steps, total int64)) (out []byte, args json.RawMessage) {
	out, args, _ = d.script(ctx, s, cat, raw, progress)
	return out, args
}

// script is Script that also reports a call refused before any job
// (scripts.Caller.Check: arguments that do not fit the script's
// parameters, a destructive script without its grant).
func (d *Dispatcher) script(ctx context.Context, s *scripts.Script, cat *scripts.Catalogue, raw json.RawMessage,
	progress func(steps, total int64)) (out []byte, args json.RawMessage, refused bool) {
	caller := d.Caller(cat)
	checked, refusal := caller.Check(s, raw)
	if refusal != nil {
		d.log.Debug("script call refused", "tool", s.Name, "caller", CallerFrom(ctx))
		return Unsubmitted(refusal), raw, true
	}
	out, err := caller.Call(ctx, s, checked, progress)
	if err != nil {
		out = d.Failure(ctx, s.Name, err)
		if o, perr := wire.ParseObject(out); perr == nil {
			out, _ = scripts.WithScriptFields(s, o).MarshalJSON()
		}
	}
	return out, raw, false
}
