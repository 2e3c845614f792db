package compiler

import (
	"strings"

	"github.com/axpool/axpool/compiler/syntax"
	"github.com/axpool/axpool/internal/spell"
	"github.com/axpool/axpool/policy"
)

// capCandidates are the names accepted in `!{...}`: canonical names and the
// reference's aliases (policy.AliasOf).
var capCandidates = func() []string {
	out := make([]string, 0, policy.NumCapabilities+8)
	for _, c := range policy.All() {
		out = append(out, c.String())
	}
	return append(out, "net", "db", "ui", "time", "llm", "actor_spawn", "actor_send", "step_input")
}()

// parseCapName maps an annotation name (canonical or alias) to its
// capability.
func parseCapName(name string) (policy.Capability, bool) {
	if c, ok := policy.ParseCapability(name); ok {
		return c, true
	}
	return policy.AliasOf(name)
}

// suggestCap finds the capability a misspelt name most likely means: the
// only canonical capability in the same namespace (`db.write` →
// `db.query`), else the nearest name by edit distance (`net.fetc` →
// `net.fetch`).
func suggestCap(name string) string {
	if i := strings.IndexByte(name, '.'); i > 0 {
		ns := name[:i+1]
		found := ""
		for _, c := range policy.All() {
			if strings.HasPrefix(c.String(), ns) {
				if found != "" {
					found = ""
					break
				}
				found = c.String()
			}
		}
		if found != "" {
			return found
		}
	}
	if s, ok := spell.Nearest(name, capCandidates); ok {
		return s
	}
	return ""
}

// declaredCaps validates f's `!{...}` annotation (spec §6.3): every name
// must be canonical or an alias; unknown names are E007.
func (c *checker) declaredCaps(f *funcSym) {
	for _, cn := range f.decl.Caps {
		if cn == nil {
			continue
		}
		cp, ok := parseCapName(cn.Name)
		if !ok {
			msg := "unknown capability '" + cn.Name + "'"
			s := suggestCap(cn.Name)
			if s != "" {
				msg += " (did you mean '" + s + "'?)"
			}
			e := c.errorf(cn, CodeCapability, "%s", msg)
			e.Subject, e.Suggestion = cn.Name, s
			continue
		}
		if f.capMask&(1<<cp) != 0 {
			continue
		}
		f.capMask |= 1 << cp
		f.caps = append(f.caps, cp)
	}
}

// requireCap checks that the current function declares capability cp,
// needed because it calls `callee` (verb "calls") or uses `spawn`/`send`
// (verb "uses"). Each missing capability is reported once per function.
func (c *checker) requireCap(n syntax.Node, verb, callee string, cp policy.Capability) {
	f := c.fn
	if f == nil || f.capMask&(1<<cp) != 0 {
		return
	}
	key := f.unit.file + "\x00" + f.name + "\x00" + cp.String()
	if c.capReported[key] {
		return
	}
	c.capReported[key] = true
	e := c.errorf(n, CodeCapability, "function '%s' %s '%s' which requires capability '%s'; declare it: !{%s}",
		f.name, verb, callee, cp, cp)
	e.Subject, e.Suggestion = cp.String(), cp.String()
}

// moduleCaps returns the capabilities recorded in the compiled function:
// the declared ones plus step.input when the body calls step_input.
func (f *funcSym) moduleCaps() []policy.Capability {
	caps := append([]policy.Capability(nil), f.caps...)
	if f.usesStepInput && f.capMask&(1<<policy.StepInput) == 0 {
		caps = append(caps, policy.StepInput)
	}
	return caps
}
