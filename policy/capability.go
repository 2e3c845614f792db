package policy

import "github.com/axpool/axpool/internal/spell"

// Capability identifies one effect a program may perform. The ids are frozen
// (docs/tools.md §3) and appear in bytecode, event logs and the
// capability_set_hash.
type Capability uint8

// The 13 canonical capabilities, ids frozen (docs/tools.md §3); tool.call
// (code mode: a program's call of an upstream MCP server's tool,
// docs/code-mode.md) and input.ask (a question to the run's caller) were
// added after the first 11.
const (
	NetFetch   Capability = 0
	FsRead     Capability = 1
	FsWrite    Capability = 2
	DbQuery    Capability = 3
	UiRender   Capability = 4
	TimeNow    Capability = 5
	Random     Capability = 6
	LlmCall    Capability = 7
	ActorSpawn Capability = 8
	ActorSend  Capability = 9
	StepInput  Capability = 10
	ToolCall   Capability = 11
	InputAsk   Capability = 12

	// NumCapabilities is the number of canonical capabilities.
	NumCapabilities = 13
)

var capNames = [NumCapabilities]string{
	"net.fetch", "fs.read", "fs.write", "db.query", "ui.render", "time.now",
	"random", "llm.call", "actor.spawn", "actor.send", "step.input", "tool.call",
	"input.ask",
}

// debugNames are the CamelCase names the seed uses in messages such as
// `CapabilityBudgetExceeded(LlmCall)` (docs/tools.md §2 "budget exceeded").
var debugNames = [NumCapabilities]string{
	"NetFetch", "FsRead", "FsWrite", "DbQuery", "UiRender", "TimeNow",
	"Random", "LlmCall", "ActorSpawn", "ActorSend", "StepInput", "ToolCall",
	"InputAsk",
}

// aliases are accepted in `!{...}` annotations by the reference but refused
// by the strict policy validator with a hint naming the canonical capability.
var aliases = map[string]Capability{
	"net":         NetFetch,
	"db":          DbQuery,
	"ui":          UiRender,
	"time":        TimeNow,
	"llm":         LlmCall,
	"actor_spawn": ActorSpawn,
	"actor_send":  ActorSend,
	"step_input":  StepInput,
}

// String returns the canonical dotted name ("net.fetch"), or "capability(N)"
// for an id outside the canonical set.
func (c Capability) String() string {
	if int(c) < NumCapabilities {
		return capNames[c]
	}
	return "capability(" + itoa(int(c)) + ")"
}

// DebugName returns the CamelCase name ("LlmCall") used in seed-compatible
// error messages.
func (c Capability) DebugName() string {
	if int(c) < NumCapabilities {
		return debugNames[c]
	}
	return c.String()
}

// Valid reports whether c is one of the canonical capabilities.
func (c Capability) Valid() bool { return int(c) < NumCapabilities }

// ParseCapability maps a canonical name ("llm.call") to its Capability.
func ParseCapability(name string) (Capability, bool) {
	for i, n := range capNames {
		if n == name {
			return Capability(i), true
		}
	}
	return 0, false
}

// AliasOf reports the canonical capability an alias ("net") stands for.
// Canonical names are not aliases.
func AliasOf(name string) (Capability, bool) {
	c, ok := aliases[name]
	return c, ok
}

// All returns the canonical capabilities in id order.
func All() []Capability {
	out := make([]Capability, NumCapabilities)
	for i := range out {
		out[i] = Capability(i)
	}
	return out
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b [20]byte
	i := len(b)
	for n > 0 {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
	}
	return string(b[i:])
}

// Suggest returns the canonical capability a near-miss name most likely
// means ("net.fetc" → "net.fetch"): spell.Nearest over the canonical names
// (the "did you mean" rule of docs/language.md). Aliases are reported by
// AliasOf, not here.
func Suggest(name string) (Capability, bool) {
	s, ok := spell.Nearest(name, capNames[:])
	if !ok {
		return 0, false
	}
	return ParseCapability(s)
}
