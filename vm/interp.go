package vm

import (
	"context"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/axpool/axpool/internal/text"
	"github.com/axpool/axpool/policy"
)

// This file holds the interpreter: Run, the machine state, the dispatch
// loop and its slow path (checkpoint), and the actor scheduler.
//
// Frames live on an explicit per-actor stack (no Go recursion per .ax
// call). Each actor has one operand stack of Values: a frame's locals start
// at its base (the arguments pushed by the caller become the callee's first
// locals in place) and its operands follow them.
//
// Step accounting: m.boundary is the absolute step count at which the loop
// must stop for the slow path (step limit, progress, clock/cancellation,
// actor slice, trace). The loop keeps left = boundary - steps in a register
// and decrements it once per basic instruction; fused instructions take the
// extra steps they stand for, or run as their first basic instruction when
// fewer are left. So every boundary is hit exactly and step counts never
// depend on fusion, progress or tracing.

// stopReason says why exec returned without an error.
type stopReason uint8

const (
	stopDone    stopReason = iota + 1 // the actor's entry function returned
	stopYield                         // the slice ended
	stopBlocked                       // RECEIVE on an empty mailbox
)

type actorState uint8

const (
	actorRunnable actorState = iota
	actorBlocked
	actorDone
)

// frame is a suspended caller: its function, the pc to resume at and its
// base in the operand stack.
type frame struct {
	fn   *pfunc
	pc   int32
	base int32
}

// actor is one thread of execution (the root actor runs the entry function).
type actor struct {
	id     int64
	frames []frame
	fn     *pfunc
	pc     int
	base   int
	stack  []Value
	sp     int
	mail   []Value
	mhead  int
	sorts  []*sortState // list_sort_by calls in progress, innermost last (sort.go)
	state  actorState
	result Value
}

// popMessage removes the first pending message of a's mailbox. The
// consumed prefix is reclaimed as it grows, so a mailbox that never drains
// completely holds O(pending) slots, not O(messages ever received).
func (a *actor) popMessage() {
	a.mail[a.mhead] = Value{}
	a.mhead++
	switch {
	case a.mhead == len(a.mail):
		if cap(a.mail) > maxIdleMailbox {
			a.mail = nil
		} else {
			a.mail = a.mail[:0]
		}
		a.mhead = 0
	case a.mhead >= 16 && 2*a.mhead >= len(a.mail):
		n := copy(a.mail, a.mail[a.mhead:])
		clear(a.mail[n:])
		a.mail, a.mhead = a.mail[:n], 0
	}
}

// maxIdleMailbox is the largest mailbox capacity kept once it is empty.
const maxIdleMailbox = 256

// machine is the state of one run.
type machine struct {
	ctx     context.Context
	done    <-chan struct{}
	hctx    context.Context // handler context (wall deadline, MemoryLeft), created lazily
	hcancel context.CancelFunc
	hbudget callBudget // what MemoryLeft reports during a handler call
	p       *prepared
	funcs   []*pfunc
	consts  []Value
	opts    *Options
	policy  *policy.Policy
	handler Handler

	steps        int64
	extra        int64 // steps of the current instruction's work (machine.work), taken when it completes
	boundary     int64
	maxSteps     int64
	nextProgress int64
	progEvery    int64
	progInterval time.Duration // time-based progress (Options.ProgressInterval); < 0: every clock check
	lastProgress int64         // steps of the last progress callback
	progressAt   time.Time     // time of the last progress callback (Run's start before the first)
	nextClock    int64
	sliceEnd     int64
	slice        int64
	force        bool
	start        time.Time
	maxWall      time.Duration
	maxDepth     int

	// Actors (see schedule): root runs the entry function; actors maps
	// the id of every other actor not done (created on the first spawn),
	// so finished actors are dropped and their ids never reused;
	// runq[rhead:] holds the actors still to run in this round, nextq
	// those of the next round.
	root      *actor
	actors    map[int64]*actor
	nextID    int64
	runq      []*actor
	rhead     int
	nextq     []*actor
	round     int64
	maxActors int
	current   *actor

	ui        []Value
	uiBytes   int64 // logical memory of ui
	outBytes  int64 // encoded size of ui
	maxOutput int64

	events     []Event
	eventCount int64
	eventBytes int64
	// scratch is the work memory the running instruction holds outside
	// any value (holdScratch), counted by measure.
	scratch   int64
	maxEvents int

	trace          []string
	tracing        bool
	traceLimit     int
	traceTruncated bool

	capUsed [policy.NumCapabilities]uint64
	// capParent are the capability uses of the run this one is nested in
	// (a named script's run inside a tool_call of it), which this run's
	// uses count against too (authorize); nil for a top-level run.
	capParent *capCounts

	token      *runToken
	memLimit   int64
	memCharged int64
	memPeak    int64
	// sbuf is the buffer of the run's newest ++ result (see concat):
	// len is that string's length, cap the buffer's.
	sbuf []byte
	// ltail is the tail of the newest backing array list_push made:
	// measure counts its spare capacity.
	ltail *listTail

	debug      io.Writer
	debugLeft  int
	debugTrunc bool
}

// Run executes m's entry function (Options.Entry, default main) with
// Options.Args until it returns or a limit trips, and returns its value,
// the steps executed, ui_output, trace and event log. Errors:
// *RuntimeError (program failures, exact messages per docs/language.md
// "Runtime errors"),
// *LimitError (steps, wall_ms, memory_mb, output_bytes, call_depth),
// *CapabilityError (denied or budget exceeded), *CancelledError (ctx done;
// errors.Is(err, context.Canceled)), *EntryError, *BytecodeError. With an
// error, the returned *Result still holds what the run produced up to the
// failure (Steps, UIOutput, Trace, Events).
func Run(ctx context.Context, mod *Module, opts Options) (res *Result, err error) {
	p, err := mod.prepare()
	if err != nil {
		return &Result{}, err
	}
	entry, err := resolveEntry(p, &opts)
	if err != nil {
		return &Result{}, err
	}
	m := newMachine(ctx, p, &opts)
	defer func() {
		if m.hcancel != nil {
			m.hcancel()
		}
	}()
	defer func() {
		if r := recover(); r != nil {
			err = m.internalError(r)
			res = m.result(Value{})
		}
	}()
	root := m.spawnActor(entry)
	copy(root.stack, opts.Args)
	m.root = root
	m.runq = append(m.runq, root)
	v, err := m.schedule()
	if err != nil {
		return m.result(Value{}), err
	}
	m.sampleMemory()
	return m.result(v), nil
}

func resolveEntry(p *prepared, opts *Options) (*pfunc, error) {
	var entry *pfunc
	if opts.Entry == "" {
		if p.mod.Entry < 0 {
			return nil, &EntryError{Name: "main", Msg: "entry function `main` not found"}
		}
		entry = p.funcs[p.mod.Entry]
	} else {
		for _, f := range p.funcs {
			if f.name == opts.Entry {
				entry = f
				break
			}
		}
		if entry == nil {
			return nil, &EntryError{Name: opts.Entry, Msg: fmt.Sprintf("entry function `%s` not found", opts.Entry)}
		}
	}
	if len(opts.Args) != entry.numParams {
		return nil, &EntryError{Name: entry.name, Msg: fmt.Sprintf("entry function `%s` takes %d arguments, got %d",
			entry.name, entry.numParams, len(opts.Args))}
	}
	return entry, nil
}

func newMachine(ctx context.Context, p *prepared, opts *Options) *machine {
	m := &machine{
		ctx: ctx, done: ctx.Done(), p: p, funcs: p.funcs, consts: p.consts, opts: opts,
		policy: opts.Policy, handler: opts.Handler, start: time.Now(),
		maxWall: opts.Limits.MaxWall, maxOutput: opts.Limits.MaxOutput,
	}
	m.capParent, _ = ctx.Value(capCountsKey{}).(*capCounts)
	m.maxActors = opts.Limits.MaxActors
	if m.maxActors <= 0 {
		m.maxActors = DefaultMaxActors
	}
	if m.handler == nil {
		m.handler = MockHandler{}
	}
	m.token = &runToken{}
	switch l := opts.Limits.MaxSteps; {
	case l == 0:
		m.maxSteps = DefaultMaxSteps
	case l < 0:
		m.maxSteps = 0
	default:
		m.maxSteps = l
	}
	m.maxDepth = opts.Limits.MaxCallDepth
	if m.maxDepth <= 0 {
		m.maxDepth = DefaultMaxCallDepth
	}
	m.memLimit = opts.Limits.MaxMemory
	if m.memLimit <= 0 {
		m.memLimit = DefaultMaxMemory
	}
	m.progEvery = math.MaxInt64
	m.nextProgress = math.MaxInt64
	if opts.Progress != nil {
		m.progEvery = opts.ProgressEvery
		if m.progEvery <= 0 {
			m.progEvery = DefaultProgressEvery
		}
		m.nextProgress = m.progEvery
		m.progInterval = opts.ProgressInterval
		if m.progInterval == 0 {
			m.progInterval = DefaultProgressInterval
		}
		m.progressAt = m.start
	}
	m.slice = opts.SliceSteps
	if m.slice <= 0 {
		m.slice = DefaultSliceSteps
	}
	m.maxEvents = opts.MaxEvents
	if m.maxEvents <= 0 {
		m.maxEvents = DefaultMaxEvents
	}
	if opts.Trace {
		m.tracing = true
		m.traceLimit = opts.TraceLimit
		if m.traceLimit <= 0 {
			m.traceLimit = DefaultTraceLimit
		}
	}
	m.debug = opts.Debug
	m.debugLeft = opts.MaxDebugBytes
	if m.debugLeft <= 0 {
		m.debugLeft = DefaultMaxDebugBytes
	}
	return m
}

func (m *machine) result(v Value) *Result {
	return &Result{
		Value: v, Steps: m.steps, UIOutput: m.ui, Trace: m.trace, TraceTruncated: m.traceTruncated,
		Events: m.events, EventCount: m.eventCount, MemoryPeak: m.memPeak,
	}
}

// internalError converts a recovered panic (a type confusion from a
// malformed module, a VM or handler bug) into a RuntimeError located at
// the current actor's saved position (every instruction that calls out of
// the dispatch loop saves it first).
func (m *machine) internalError(r any) error {
	var detail string
	switch x := r.(type) {
	case typeConfusion:
		detail = "expected " + x.want + ", got " + x.got.String()
	default:
		detail = fmt.Sprint(r)
	}
	var (
		loc Location
		fn  *pfunc
		pc  int
	)
	a := m.current
	if a != nil && a.fn != nil {
		fn, pc = a.fn, a.pc
		loc = m.location(fn, pc)
	}
	e := m.internalErr(loc, detail)
	m.setErrorContext(e, a, fn, pc)
	return e
}

// internalErr is the runtime error of an internal failure at loc — a value
// of a kind the checker rules out (a malformed module), a VM or handler
// bug. The message names only the place, `internal error in main at 3:5`,
// never Go runtime text; the detail (cut to MaxShownMessage bytes) is
// written to Options.InternalLog (Options.Debug when nil), outside the
// debug budget.
func (m *machine) internalErr(loc Location, detail string) *RuntimeError {
	msg := "internal error"
	if loc.Func != "" {
		msg += " in " + text.Clip(loc.Func, MaxShownValue)
		if loc.Pos.Line > 0 {
			msg += " at " + strconv.Itoa(int(loc.Pos.Line)) + ":" + strconv.Itoa(int(loc.Pos.Col))
		}
	}
	w := m.opts.InternalLog
	if w == nil {
		w = m.debug
	}
	if w != nil {
		_, _ = io.WriteString(w, msg+": "+text.Clip(detail, MaxShownMessage)+"\n")
	}
	return rtErr(msg)
}

// location is the Location (without call stack) of fn executing
// instruction pc.
func (m *machine) location(fn *pfunc, pc int) Location {
	f := frameAt(fn, pc)
	return Location{Func: f.Func, File: f.File, Pos: f.Pos, PC: pc}
}

// actorStackSize is the initial operand-stack length of an actor running
// f (it grows on deep calls, see growStack).
func actorStackSize(f *pfunc) int { return max(16, f.frameSize*2) }

// spawnActor creates an actor that will run f (with Unit locals) under the
// next id and registers it as live unless it is the root; the caller
// queues it.
func (m *machine) spawnActor(f *pfunc) *actor {
	a := &actor{id: m.nextID, fn: f, stack: make([]Value, actorStackSize(f)), sp: f.numLocals}
	m.nextID++
	if a.id != 0 {
		if m.actors == nil {
			m.actors = map[int64]*actor{}
		}
		m.actors[a.id] = a
	}
	return a
}

// schedule runs the actors until the root returns. Scheduling is
// deterministic round-robin (docs/language.md "Actors"): a round runs, one
// slice each and in order, the actors that were runnable when it began;
// an actor that yields, a newly spawned actor and a blocked actor that
// receives a message join the next round, in that order of events.
// Picking an actor is O(1) amortised and finished actors are dropped, so
// the cost per step does not grow with the number of actors ever spawned.
func (m *machine) schedule() (Value, error) {
	for {
		a := m.pickRunnable()
		if a == nil {
			root := m.root
			e := rtErr("deadlock: all actors blocked with no pending messages")
			m.setErrorContext(e, root, root.fn, root.pc)
			return Value{}, e
		}
		m.current = a
		m.sliceEnd = m.steps + m.slice
		if len(m.actors) > 0 {
			m.logEvent(Event{Kind: EventSchedulerTick, Round: m.round, Actor: a.id})
		}
		m.rebound()
		if m.tracing {
			m.boundary = m.steps // the first instruction is traced too
		}
		stop, err := m.exec(a)
		if err != nil {
			return Value{}, err
		}
		switch stop {
		case stopDone:
			a.state = actorDone
			if a == m.root {
				return a.result, nil
			}
			delete(m.actors, a.id)
			a.stack, a.frames, a.mail, a.result = nil, nil, nil, Value{}
		case stopBlocked:
			a.state = actorBlocked
		default:
			m.nextq = append(m.nextq, a)
		}
	}
}

// pickRunnable returns the next actor of this round, starting the next
// round when this one is over, or nil when no actor is runnable.
func (m *machine) pickRunnable() *actor {
	if m.rhead == len(m.runq) {
		if len(m.nextq) == 0 {
			return nil
		}
		m.runq, m.nextq = m.nextq, m.runq[:0]
		m.rhead = 0
		m.round++
	}
	a := m.runq[m.rhead]
	m.runq[m.rhead] = nil
	m.rhead++
	return a
}

// rebound computes the next step boundary.
func (m *machine) rebound() {
	b := min(m.maxSteps, m.nextProgress, m.nextClock, m.sliceEnd)
	if m.tracing {
		b = m.steps + 1
	}
	m.boundary = max(b, m.steps)
}

// checkpoint is the loop's slow path, run when steps == boundary, before
// the instruction at a.pc. It reports whether the actor must yield.
func (m *machine) checkpoint(a *actor) (bool, error) {
	s := m.steps
	if s >= m.maxSteps {
		m.steps = m.maxSteps + 1
		return false, m.stepError()
	}
	if s >= m.nextProgress {
		m.progress(s)
		for m.nextProgress <= s {
			m.nextProgress += m.progEvery
		}
	}
	if s >= m.nextClock || m.force {
		m.force = false
		m.nextClock = s + clockEvery
		if err := m.checkClock(); err != nil {
			return false, err
		}
		// Time-based progress: a run whose steps are slow (long
		// built-ins) still reports at least every progInterval.
		if m.opts.Progress != nil && s > m.lastProgress &&
			(m.progInterval < 0 || time.Since(m.progressAt) >= m.progInterval) {
			m.progress(s)
		}
	}
	if s >= m.sliceEnd {
		return true, nil
	}
	if m.tracing {
		m.traceInstr(a)
	}
	m.rebound()
	return false, nil
}

// progress calls Options.Progress with s unless a count as large was
// reported already (the counts reported strictly increase).
func (m *machine) progress(s int64) {
	if s <= m.lastProgress {
		return
	}
	m.sampleMemory()
	m.opts.Progress(s)
	m.lastProgress = s
	m.progressAt = time.Now()
}

// checkClock returns the wall limit's error once it has passed, else
// CancelledError once the run's context is done. The limit comes first: a
// run cancelled because it ran past its limit (a worker's watchdog) ends
// as the limit it exceeded.
func (m *machine) checkClock() error {
	if m.maxWall > 0 && time.Since(m.start) > m.maxWall {
		return m.wallError()
	}
	if m.done != nil {
		select {
		case <-m.done:
			return cancelled(m.ctx)
		default:
		}
	}
	return nil
}

// stepError is the step limit's *LimitError.
func (m *machine) stepError() error {
	return &LimitError{Kind: LimitSteps, Limit: m.maxSteps,
		Msg: fmt.Sprintf("max execution steps exceeded (%d)", m.maxSteps)}
}

// wallError is the wall-clock limit's *LimitError.
func (m *machine) wallError() error {
	ms := m.maxWall.Milliseconds()
	return &LimitError{Kind: LimitWallMs, Limit: ms,
		Msg: fmt.Sprintf("wall-clock execution limit of %d ms exceeded", ms)}
}

// traceInstr records the instruction about to execute.
func (m *machine) traceInstr(a *actor) {
	if len(m.trace) >= m.traceLimit {
		m.traceTruncated = true
		m.tracing = false
		return
	}
	in := &a.fn.code[a.pc]
	var sb strings.Builder
	sb.WriteByte('[')
	sb.WriteString(text.Clip(a.fn.name, MaxShownValue))
	sb.WriteByte(':')
	sb.WriteString(strconv.Itoa(a.pc))
	sb.WriteString("] ")
	if in.op == iSortStep {
		sb.WriteString("LIST_SORT_STEP") // list_sort_by's internal step (sort.go)
	} else {
		sb.WriteString(in.base.String())
	}
	for _, o := range operands(in.base, in.a, in.b) {
		sb.WriteByte(' ')
		sb.WriteString(strconv.Itoa(int(o)))
	}
	sb.WriteString("  stack_depth=")
	sb.WriteString(strconv.Itoa(a.sp - a.base - a.fn.numLocals))
	m.trace = append(m.trace, sb.String())
}

// operands returns the meaningful operands of a basic instruction.
func operands(op Opcode, a, b int32) []int32 {
	switch op {
	case CONST, LOAD, STORE, JMP, JMP_FALSE, JMP_TRUE, JMP_FALSE_OR_POP, JMP_TRUE_OR_POP,
		FUNC, MAKE_LIST, MAKE_MAP, WITH_FIELD, FIELD, VFIELD, SPAWN:
		return []int32{a}
	case CALL, BUILTIN, CAPCALL, MAKE_RECORD, MAKE_ENUM, TEST_TAG, TEST_EQ, FOR_NEXT, ASSERT:
		return []int32{a, b}
	case CALL_VALUE:
		return []int32{b}
	case RECEIVE:
		if a != 0 {
			return []int32{a}
		}
	}
	return nil
}

// growStack makes a's stack at least need slots long.
func (m *machine) growStack(a *actor, need int) error {
	n := max(need, 2*len(a.stack))
	if err := m.charge(int64(n-len(a.stack)) * slotSize); err != nil {
		return err
	}
	s := make([]Value, n)
	copy(s, a.stack[:a.sp])
	a.stack = s
	return nil
}

func callDepthError(limit int) error {
	return &LimitError{Kind: LimitCallDepth, Limit: int64(limit),
		Msg: fmt.Sprintf("call depth limit exceeded (%d frames)", limit)}
}

// exec runs actor a from its saved state until it returns, blocks, yields
// at the end of its slice, or fails.
func (m *machine) exec(a *actor) (stop stopReason, err error) {
	var (
		stack  = a.stack
		sp     = a.sp
		fn     = a.fn
		code   = fn.code
		pc     = a.pc
		base   = a.base
		consts = m.consts
		left   = m.boundary - m.steps
		in     *pinstr
		op     Opcode
		errPC  int
		cwant  string // what a confused instruction expected (goto confused)
		cgot   Kind
	)
	// The registers are written back to a (SAVE below) before anything
	// that may look at the actor's state: memory measurement, errors,
	// yields. (A closure would keep them out of machine registers.)
	for {
		if left <= 0 {
			a.stack, a.sp, a.fn, a.pc, a.base = stack, sp, fn, pc, base
			m.steps = m.boundary - left
			yield, cerr := m.checkpoint(a)
			if cerr != nil {
				// m.steps is final (MaxSteps+1 for the step limit).
				m.setErrorContext(cerr, a, fn, pc)
				return 0, cerr
			}
			if yield {
				return stopYield, nil
			}
			left = m.boundary - m.steps
		}
		left--
		in = &code[pc]
		op = in.op
	dispatch:
		switch op {
		case NOP:
			pc++
		case CONST:
			stack[sp] = consts[in.a]
			sp++
			pc++
		case UNIT:
			stack[sp] = Value{}
			sp++
			pc++
		case NONE:
			stack[sp] = Value{k: KindOption}
			sp++
			pc++
		case LOAD:
			stack[sp] = stack[base+int(in.a)]
			sp++
			pc++
		case STORE:
			sp--
			stack[base+int(in.a)] = stack[sp]
			pc++
		case POP:
			sp--
			pc++
		case DUP:
			stack[sp] = stack[sp-1]
			sp++
			pc++

		case ADD_INT:
			x, y := int64(stack[sp-2].n), int64(stack[sp-1].n)
			r := x + y
			if (x^r)&(y^r) < 0 {
				err, errPC = rtErr("integer overflow in addition"), pc
				goto fail
			}
			stack[sp-2] = Int(r)
			sp--
			pc++
		case SUB_INT:
			x, y := int64(stack[sp-2].n), int64(stack[sp-1].n)
			r := x - y
			if (x^y)&(x^r) < 0 {
				err, errPC = rtErr("integer overflow in subtraction"), pc
				goto fail
			}
			stack[sp-2] = Int(r)
			sp--
			pc++
		case MUL_INT:
			x, y := int64(stack[sp-2].n), int64(stack[sp-1].n)
			r, ok := mulInt(x, y)
			if !ok {
				err, errPC = rtErr("integer overflow in multiplication"), pc
				goto fail
			}
			stack[sp-2] = Int(r)
			sp--
			pc++
		case DIV_INT, REM_INT:
			x, y := int64(stack[sp-2].n), int64(stack[sp-1].n)
			r, e := divInt(op, x, y)
			if e != nil {
				err, errPC = e, pc
				goto fail
			}
			stack[sp-2] = Int(r)
			sp--
			pc++
		case NEG_INT:
			x := int64(stack[sp-1].n)
			if x == math.MinInt64 {
				err, errPC = rtErr("integer overflow in negation"), pc
				goto fail
			}
			stack[sp-1] = Int(-x)
			pc++

		case ADD_FLOAT:
			stack[sp-2] = Float(stack[sp-2].AsFloat() + stack[sp-1].AsFloat())
			sp--
			pc++
		case SUB_FLOAT:
			stack[sp-2] = Float(stack[sp-2].AsFloat() - stack[sp-1].AsFloat())
			sp--
			pc++
		case MUL_FLOAT:
			stack[sp-2] = Float(stack[sp-2].AsFloat() * stack[sp-1].AsFloat())
			sp--
			pc++
		case DIV_FLOAT, REM_FLOAT:
			y := stack[sp-1].AsFloat()
			if y == 0 {
				if op == DIV_FLOAT {
					err = rtErr("division by zero")
				} else {
					err = rtErr("remainder by zero")
				}
				errPC = pc
				goto fail
			}
			if op == DIV_FLOAT {
				stack[sp-2] = Float(stack[sp-2].AsFloat() / y)
			} else {
				stack[sp-2] = Float(math.Mod(stack[sp-2].AsFloat(), y))
			}
			sp--
			pc++
		case NEG_FLOAT:
			stack[sp-1] = Float(-stack[sp-1].AsFloat())
			pc++

		case CONCAT:
			if stack[sp-2].k != KindString || stack[sp-1].k != KindString {
				cwant, cgot = "String", otherKind(KindString, stack[sp-2].k, stack[sp-1].k)
				goto confused
			}
			x, y := stack[sp-2].AsString(), stack[sp-1].AsString()
			switch {
			case len(y) == 0:
			case len(x) == 0:
				stack[sp-2] = stack[sp-1]
			default:
				a.stack, a.sp, a.fn, a.pc, a.base = stack, sp, fn, pc, base
				if e := m.charge(strOverhead + int64(len(x)) + int64(len(y))); e != nil {
					err, errPC = e, pc
					goto fail
				}
				r, n, e := m.concat(x, y)
				if e != nil {
					err, errPC = e, pc
					goto fail
				}
				stack[sp-2] = Str(r)
				if n >= BytesPerStep {
					m.work(n)
					left = m.takeWork(left)
				}
			}
			sp--
			pc++

		case EQ, NE:
			x, y := stack[sp-2], stack[sp-1]
			r, e := equal(x, y, m)
			if e != nil {
				err, errPC = e, pc
				goto fail
			}
			if x.k >= KindString {
				// The comparison reads at most the smaller value; values
				// under heavyBytes compare for their one step.
				if n := min(x.heapSize(), y.heapSize()); n > heavyBytes {
					m.work(int(min(n, math.MaxInt32)))
					left = m.takeWork(left)
				}
			}
			stack[sp-2] = Bool(r == (op == EQ))
			sp--
			pc++
		case LT_INT:
			stack[sp-2] = Bool(int64(stack[sp-2].n) < int64(stack[sp-1].n))
			sp--
			pc++
		case LE_INT:
			stack[sp-2] = Bool(int64(stack[sp-2].n) <= int64(stack[sp-1].n))
			sp--
			pc++
		case GT_INT:
			stack[sp-2] = Bool(int64(stack[sp-2].n) > int64(stack[sp-1].n))
			sp--
			pc++
		case GE_INT:
			stack[sp-2] = Bool(int64(stack[sp-2].n) >= int64(stack[sp-1].n))
			sp--
			pc++
		case LT_FLOAT:
			stack[sp-2] = Bool(stack[sp-2].AsFloat() < stack[sp-1].AsFloat())
			sp--
			pc++
		case LE_FLOAT:
			stack[sp-2] = Bool(stack[sp-2].AsFloat() <= stack[sp-1].AsFloat())
			sp--
			pc++
		case GT_FLOAT:
			stack[sp-2] = Bool(stack[sp-2].AsFloat() > stack[sp-1].AsFloat())
			sp--
			pc++
		case GE_FLOAT:
			stack[sp-2] = Bool(stack[sp-2].AsFloat() >= stack[sp-1].AsFloat())
			sp--
			pc++
		case LT_STR:
			if stack[sp-2].k != KindString || stack[sp-1].k != KindString {
				cwant, cgot = "String", otherKind(KindString, stack[sp-2].k, stack[sp-1].k)
				goto confused
			}
			stack[sp-2] = Bool(stack[sp-2].AsString() < stack[sp-1].AsString())
			sp--
			pc++
		case LE_STR:
			if stack[sp-2].k != KindString || stack[sp-1].k != KindString {
				cwant, cgot = "String", otherKind(KindString, stack[sp-2].k, stack[sp-1].k)
				goto confused
			}
			stack[sp-2] = Bool(stack[sp-2].AsString() <= stack[sp-1].AsString())
			sp--
			pc++
		case GT_STR:
			if stack[sp-2].k != KindString || stack[sp-1].k != KindString {
				cwant, cgot = "String", otherKind(KindString, stack[sp-2].k, stack[sp-1].k)
				goto confused
			}
			stack[sp-2] = Bool(stack[sp-2].AsString() > stack[sp-1].AsString())
			sp--
			pc++
		case GE_STR:
			if stack[sp-2].k != KindString || stack[sp-1].k != KindString {
				cwant, cgot = "String", otherKind(KindString, stack[sp-2].k, stack[sp-1].k)
				goto confused
			}
			stack[sp-2] = Bool(stack[sp-2].AsString() >= stack[sp-1].AsString())
			sp--
			pc++
		case NOT:
			stack[sp-1] = Bool(!stack[sp-1].AsBool())
			pc++

		case JMP:
			pc = int(in.a)
		case JMP_FALSE:
			sp--
			if stack[sp].AsBool() {
				pc++
			} else {
				pc = int(in.a)
			}
		case JMP_TRUE:
			sp--
			if stack[sp].AsBool() {
				pc = int(in.a)
			} else {
				pc++
			}
		case JMP_FALSE_OR_POP:
			if stack[sp-1].AsBool() {
				sp--
				pc++
			} else {
				pc = int(in.a)
			}
		case JMP_TRUE_OR_POP:
			if stack[sp-1].AsBool() {
				pc = int(in.a)
			} else {
				sp--
				pc++
			}

		case CALL:
			callee := m.funcs[in.a]
			if len(a.frames)+2 > m.maxDepth {
				err, errPC = callDepthError(m.maxDepth), pc
				goto fail
			}
			nb := sp - int(in.b)
			if need := nb + callee.frameSize; need > len(stack) {
				a.stack, a.sp, a.fn, a.pc, a.base = stack, sp, fn, pc, base
				if e := m.growStack(a, need); e != nil {
					err, errPC = e, pc
					goto fail
				}
				stack = a.stack
			}
			a.frames = append(a.frames, frame{fn: fn, pc: int32(pc + 1), base: int32(base)})
			for i := sp; i < nb+callee.numLocals; i++ {
				stack[i] = Value{}
			}
			fn, code, base, sp, pc = callee, callee.code, nb, nb+callee.numLocals, 0
		case CALL_VALUE:
			nargs := int(in.b)
			fv := stack[sp-nargs-1]
			if fv.k != KindFn {
				cwant, cgot = "FnRef", fv.k
				goto confused
			}
			if fv.n >= uint64(len(m.funcs)) {
				err, errPC = m.internalErr(m.location(fn, pc), "function reference "+strconv.FormatUint(fv.n, 10)+" out of range"), pc
				goto fail
			}
			callee := m.funcs[fv.n]
			if callee.numParams != nargs {
				err, errPC = rtErrf("function `%s` takes %d arguments, got %d", text.Clip(callee.name, MaxShownValue), callee.numParams, nargs), pc
				goto fail
			}
			if len(a.frames)+2 > m.maxDepth {
				err, errPC = callDepthError(m.maxDepth), pc
				goto fail
			}
			copy(stack[sp-nargs-1:], stack[sp-nargs:sp])
			sp--
			nb := sp - nargs
			if need := nb + callee.frameSize; need > len(stack) {
				a.stack, a.sp, a.fn, a.pc, a.base = stack, sp, fn, pc, base
				if e := m.growStack(a, need); e != nil {
					err, errPC = e, pc
					goto fail
				}
				stack = a.stack
			}
			a.frames = append(a.frames, frame{fn: fn, pc: int32(pc + 1), base: int32(base)})
			for i := sp; i < nb+callee.numLocals; i++ {
				stack[i] = Value{}
			}
			fn, code, base, sp, pc = callee, callee.code, nb, nb+callee.numLocals, 0
		case RET:
			r := stack[sp-1]
			if len(a.frames) == 0 {
				a.result = r
				sp = base
				a.stack, a.sp, a.fn, a.pc, a.base = stack, sp, fn, pc, base
				m.steps = m.boundary - left
				return stopDone, nil
			}
			f := &a.frames[len(a.frames)-1]
			stack[base] = r
			sp = base + 1
			fn, code, pc, base = f.fn, f.fn.code, int(f.pc), int(f.base)
			a.frames = a.frames[:len(a.frames)-1]
		case BUILTIN:
			n := int(in.b)
			a.stack, a.sp, a.fn, a.pc, a.base = stack, sp, fn, pc, base
			m.steps = m.boundary - left
			if Builtin(in.a) == BListSortBy {
				// list_sort_by runs as the internal function sortByFunc
				// (sort.go), called like a function of two parameters.
				if len(a.frames)+2 > m.maxDepth {
					err, errPC = callDepthError(m.maxDepth), pc
					goto fail
				}
				st := newSortState(stack[sp-2], stack[sp-1])
				if e := m.charge(st.memSize()); e != nil {
					err, errPC = e, pc
					goto fail
				}
				nb := sp - 2
				if need := nb + sortByFunc.frameSize; need > len(stack) {
					if e := m.growStack(a, need); e != nil {
						err, errPC = e, pc
						goto fail
					}
					stack = a.stack
				}
				a.sorts = append(a.sorts, st)
				stack[nb] = Int(int64(len(a.sorts) - 1))
				a.frames = append(a.frames, frame{fn: fn, pc: int32(pc + 1), base: int32(base)})
				fn, code, base, pc = sortByFunc, sortByFunc.code, nb, 0
				m.work(len(st.src) * int(slotSize))
				left = m.takeWork(left)
				continue
			}
			r, e := m.builtin(a, fn, Builtin(in.a), stack[sp-n:sp])
			if e != nil {
				m.extra = 0
				err, errPC = e, pc
				goto fail
			}
			stack[sp-n] = r
			sp = sp - n + 1
			pc++
			if m.extra != 0 || m.force {
				left = m.takeWork(left)
			}
		case CAPCALL:
			n := int(in.b)
			a.stack, a.sp, a.fn, a.pc, a.base = stack, sp, fn, pc, base
			m.steps = m.boundary - left
			r, e := m.capCall(fn, Effect(in.a), stack[sp-n:sp])
			if e != nil {
				left -= m.extra // the steps the handler charged (ChargeSteps)
				m.extra = 0
				err, errPC = e, pc
				goto fail
			}
			stack[sp-n] = r
			sp = sp - n + 1
			pc++
			m.force = true // a handler may take long: check the clock now
			left = m.takeWork(left)
		case FUNC:
			stack[sp] = FnRef(int(in.a))
			sp++
			pc++

		case MAKE_LIST, MAKE_MAP, MAKE_RECORD, WITH_FIELD, MAKE_ENUM, SOME, OK, ERR:
			a.stack, a.sp, a.fn, a.pc, a.base = stack, sp, fn, pc, base
			n, e := m.construct(op, in.a, in.b, stack[:sp])
			if e != nil {
				err, errPC = e, pc
				goto fail
			}
			sp -= n - 1
			pc++

		case FIELD:
			v := stack[sp-1]
			if v.k != KindRecord || uint(in.a) >= uint(len((*recordObj)(v.p).fields)) {
				cwant, cgot = "a record with field "+itoa(int(in.a)), v.k
				goto confused
			}
			stack[sp-1] = (*recordObj)(v.p).fields[in.a]
			pc++
		case VFIELD:
			v := stack[sp-1]
			if v.k != KindEnum || uint(in.a) >= uint(len((*enumObj)(v.p).fields)) {
				cwant, cgot = "a struct variant with field "+itoa(int(in.a)), v.k
				goto confused
			}
			stack[sp-1] = (*enumObj)(v.p).fields[in.a]
			pc++
		case PAYLOAD:
			v := stack[sp-1]
			switch {
			case v.k == KindEnum:
				stack[sp-1] = (*enumObj)(v.p).payload
			case (v.k == KindOption || v.k == KindResult) && v.p != nil:
				stack[sp-1] = (*boxObj)(v.p).v
			default:
				cwant, cgot = "a value with a payload", v.k
				goto confused
			}
			pc++

		case TEST_TAG:
			v := stack[sp-1]
			var tag int
			switch v.k {
			case KindEnum:
				tag = (*enumObj)(v.p).variant
			case KindOption, KindResult, KindBool:
				tag = int(v.n)
			default:
				cwant, cgot = "a tagged value", v.k
				goto confused
			}
			if tag != int(in.b) {
				pc = int(in.a)
			} else {
				pc++
			}
		case TEST_EQ:
			if Equal(stack[sp-1], consts[in.b]) {
				pc++
			} else {
				pc = int(in.a)
			}
		case MATCH_FAIL:
			err, errPC = rtErr("no match found for value"), pc
			goto fail

		case FOR_NEXT:
			lv := stack[base+int(in.a)]
			if lv.k != KindList {
				cwant, cgot = "List", lv.k
				goto confused
			}
			lo := (*listObj)(lv.p)
			idx := &stack[base+int(in.a)+1]
			if idx.n < lv.n {
				stack[sp] = lo.elems[idx.n]
				sp++
				idx.n++
				pc++
			} else {
				pc = int(in.b)
			}

		case EMIT:
			a.stack, a.sp, a.fn, a.pc, a.base = stack, sp, fn, pc, base
			if e := m.emitUI(stack[sp-1], true); e != nil {
				m.extra = 0
				err, errPC = e, pc
				goto fail
			}
			pc++
			if m.extra != 0 || m.force {
				left = m.takeWork(left)
			}
		case SPAWN:
			a.stack, a.sp, a.fn, a.pc, a.base = stack, sp, fn, pc, base
			id, e := m.spawn(m.funcs[in.a])
			if e != nil {
				err, errPC = e, pc
				goto fail
			}
			stack[sp] = ActorID(id)
			sp++
			pc++
		case SEND:
			a.stack, a.sp, a.fn, a.pc, a.base = stack, sp, fn, pc, base
			if e := m.send(a, stack[sp-2], stack[sp-1]); e != nil {
				err, errPC = e, pc
				goto fail
			}
			stack[sp-2] = Value{}
			sp--
			pc++
		case RECEIVE:
			if a.mhead == len(a.mail) {
				// Block without executing: the step is taken on resumption.
				left++
				a.stack, a.sp, a.fn, a.pc, a.base = stack, sp, fn, pc, base
				m.steps = m.boundary - left
				return stopBlocked, nil
			}
			msg := a.mail[a.mhead]
			if in.a != 0 {
				if e := m.checkMessage(msg, m.p.specs[in.a-1]); e != nil {
					err, errPC = e, pc
					goto fail
				}
			}
			a.popMessage()
			m.logEvent(Event{Kind: EventMessageReceive, Actor: a.id, Value: msg})
			stack[sp] = msg
			sp++
			pc++
			if m.extra != 0 || m.force {
				left = m.takeWork(left)
			}

		case ASSERT:
			sp--
			ok := stack[sp].AsBool()
			kind := "requires"
			if in.a == AssertEnsures {
				kind = "ensures"
			}
			m.logEvent(Event{Kind: EventContractCheck, Function: fn.name, Contract: kind, Index: in.b, Passed: ok})
			if !ok {
				err, errPC = contractError(fn, in.a, in.b, stack[base:base+fn.numParams]), pc
				goto fail
			}
			pc++

		// --- fused superinstructions (prepare.go) ---
		case fLcLtJf, fLcLeJf, fLcGtJf, fLcGeJf:
			if left < 3 {
				op = in.base
				goto dispatch
			}
			left -= 3
			x, y := int64(stack[base+int(in.a)].n), int64(consts[in.c].n)
			var t bool
			switch op {
			case fLcLtJf:
				t = x < y
			case fLcLeJf:
				t = x <= y
			case fLcGtJf:
				t = x > y
			default:
				t = x >= y
			}
			if t {
				pc += 4
			} else {
				pc = int(in.d)
			}
		case fLlLtJf, fLlLeJf, fLlGtJf, fLlGeJf:
			if left < 3 {
				op = in.base
				goto dispatch
			}
			left -= 3
			x, y := int64(stack[base+int(in.a)].n), int64(stack[base+int(in.c)].n)
			var t bool
			switch op {
			case fLlLtJf:
				t = x < y
			case fLlLeJf:
				t = x <= y
			case fLlGtJf:
				t = x > y
			default:
				t = x >= y
			}
			if t {
				pc += 4
			} else {
				pc = int(in.d)
			}
		case fLcEqJf, fLcNeJf:
			if left < 3 {
				op = in.base
				goto dispatch
			}
			left -= 3
			if Equal(stack[base+int(in.a)], consts[in.c]) == (op == fLcEqJf) {
				pc += 4
			} else {
				pc = int(in.d)
			}
		case fLcAddSt, fLcSubSt, fLlAddSt, fLlSubSt:
			if left < 3 {
				op = in.base
				goto dispatch
			}
			left -= 3
			x := int64(stack[base+int(in.a)].n)
			var y int64
			if op == fLcAddSt || op == fLcSubSt {
				y = int64(consts[in.c].n)
			} else {
				y = int64(stack[base+int(in.c)].n)
			}
			var r int64
			if op == fLcAddSt || op == fLlAddSt {
				r = x + y
				if (x^r)&(y^r) < 0 {
					left++ // the STORE did not run
					err, errPC = rtErr("integer overflow in addition"), pc+2
					goto fail
				}
			} else {
				r = x - y
				if (x^y)&(x^r) < 0 {
					left++
					err, errPC = rtErr("integer overflow in subtraction"), pc+2
					goto fail
				}
			}
			stack[base+int(in.d)] = Int(r)
			pc += 4
		case fLcAdd, fLcSub, fLlAdd, fLlSub:
			if left < 2 {
				op = in.base
				goto dispatch
			}
			left -= 2
			x := int64(stack[base+int(in.a)].n)
			var y int64
			if op == fLcAdd || op == fLcSub {
				y = int64(consts[in.c].n)
			} else {
				y = int64(stack[base+int(in.c)].n)
			}
			var r int64
			if op == fLcAdd || op == fLlAdd {
				r = x + y
				if (x^r)&(y^r) < 0 {
					err, errPC = rtErr("integer overflow in addition"), pc+2
					goto fail
				}
			} else {
				r = x - y
				if (x^y)&(x^r) < 0 {
					err, errPC = rtErr("integer overflow in subtraction"), pc+2
					goto fail
				}
			}
			stack[sp] = Int(r)
			sp++
			pc += 3
		case fLL:
			if left < 1 {
				op = in.base
				goto dispatch
			}
			left--
			stack[sp] = stack[base+int(in.a)]
			stack[sp+1] = stack[base+int(in.c)]
			sp += 2
			pc += 2
		case fLRet:
			if left < 1 {
				op = in.base
				goto dispatch
			}
			left--
			stack[sp] = stack[base+int(in.a)]
			sp++
			pc++
			op = RET
			goto dispatch
		case fJmpRet:
			if left < 1 {
				op = in.base
				goto dispatch
			}
			left--
			pc = int(in.a)
			op = RET
			goto dispatch
		case iSortStep:
			st := a.sorts[stack[base].n]
			less := false
			if st.started {
				sp--
				less = stack[sp].AsBool()
			}
			x, y, done, sorted, moved := st.next(less)
			if done {
				a.sorts[len(a.sorts)-1] = nil
				a.sorts = a.sorts[:len(a.sorts)-1]
				stack[sp] = listValue(sorted)
				sp++
				pc = 3
			} else {
				stack[sp], stack[sp+1], stack[sp+2] = st.fn, x, y
				sp += 3
				pc = 1
			}
			if moved > 0 {
				m.work(moved * int(slotSize))
				left = m.takeWork(left)
			}
		case fListGet:
			if lv := stack[sp-2]; lv.k == KindList && stack[sp-1].n < lv.n {
				stack[sp-2] = (*listObj)(lv.p).elems[stack[sp-1].n]
				sp--
				pc++
				continue
			}
			op = BUILTIN // (out of bounds: the error)
			goto dispatch
		case fListLen:
			if lv := stack[sp-1]; lv.k == KindList {
				stack[sp-1] = Int(int64(lv.n))
				pc++
				continue
			}
			op = BUILTIN
			goto dispatch
		case fListPush:
			// listPush's in-place push of a scalar (p nil: no heap bytes)
			// onto the newest list of a flat header, when its charge
			// stays under the limit; any other push takes BUILTIN.
			if lv, x := stack[sp-2], stack[sp-1]; lv.k == KindList && x.p == nil {
				o, n := (*listObj)(lv.p), lv.n
				if t := o.tail; o.size == flatSize && t != nil && t.owner == m.token && uint64(t.used) == n &&
					n < uint64(len(o.elems)) && t.pinned <= t.budget &&
					listOverhead+slotSize*int64(n+1) <= m.memLimit && m.memCharged+listOverhead+slotSize <= m.memLimit {
					m.memCharged += listOverhead + slotSize
					t.used++
					o.elems[n] = x
					stack[sp-2] = listOf(o, int(n)+1)
					sp--
					pc++
					continue
				}
			}
			op = BUILTIN
			goto dispatch
		case fLlLtJfp:
			if left < 3 {
				op = in.base
				goto dispatch
			}
			left -= 3
			if int64(stack[base+int(in.a)].n) < int64(stack[base+int(in.c)].n) {
				pc += 4
			} else {
				stack[sp] = Bool(false)
				sp++
				pc = int(in.d)
			}
		case fJmpJmp:
			if left < 1 {
				op = in.base
				goto dispatch
			}
			left--
			pc = int(code[in.a].a)
		case fCatItoa:
			// As int_to_string then ++ (machine.concat: the constant is
			// never the newest ++ result, so the result gets a buffer
			// of its exact length, which becomes the newest), with the
			// same two charges, when both fit under the limit.
			if iv := stack[base+int(in.c)]; left >= 3 && iv.k == KindInt {
				x := consts[in.a].AsString()
				var digits [20]byte
				d := strconv.AppendInt(digits[:0], int64(iv.n), 10)
				need := len(x) + len(d)
				charge := 2*strOverhead + int64(len(d)+need)
				if need < BytesPerStep && m.memCharged+charge <= m.memLimit {
					left -= 3
					m.memCharged += charge
					b := make([]byte, need)
					copy(b[copy(b, x):], d)
					m.sbuf = b
					stack[sp] = Str(unsafe.String(&b[0], need))
					sp++
					pc += 4
					continue
				}
			}
			op = in.base
			goto dispatch
		case fMapMatch:
			// (prepare.go fuse: BUILTIN map_get; STORE; LOAD; TEST_TAG,
			// PAYLOAD at in.c.) As map_get, for a version mapView reads as
			// it is; the local keeps its older value, which nothing reads.
			if mv, kv := stack[sp-2], stack[sp-1]; left >= 4 && mv.k == KindMap && kv.k == KindString {
				o := (*mapObj)(mv.p)
				if root, l := o.rootOf(); l <= 8 || root.st.owner != m.token {
					if v, ok := o.get(kv.AsString()); ok {
						left -= 4
						stack[sp-2] = v
						pc = int(in.c) + 1
					} else {
						left -= 3
						stack[sp-2] = Value{k: KindOption}
						pc += 4
					}
					sp--
					continue
				}
			}
			op = in.base
			goto dispatch
		case fLLGetSt:
			if left >= 3 {
				if lv, iv := stack[base+int(in.a)], stack[base+int(in.c)]; lv.k == KindList && iv.n < lv.n {
					left -= 3
					stack[base+int(in.d)] = (*listObj)(lv.p).elems[iv.n]
					pc += 4
					continue
				}
			}
			op = in.base
			goto dispatch
		case fLLPushSt:
			// As fListPush, with the list and the value in locals.
			if lv, x := stack[base+int(in.a)], stack[base+int(in.c)]; left >= 3 && lv.k == KindList && x.p == nil {
				o, n := (*listObj)(lv.p), lv.n
				if t := o.tail; o.size == flatSize && t != nil && t.owner == m.token && uint64(t.used) == n &&
					n < uint64(len(o.elems)) && t.pinned <= t.budget &&
					listOverhead+slotSize*int64(n+1) <= m.memLimit && m.memCharged+listOverhead+slotSize <= m.memLimit {
					left -= 3
					m.memCharged += listOverhead + slotSize
					t.used++
					o.elems[n] = x
					stack[base+int(in.d)] = listOf(o, int(n)+1)
					pc += 4
					continue
				}
			}
			op = in.base
			goto dispatch
		case fForStore:
			if left < 1 {
				op = in.base
				goto dispatch
			}
			lv := stack[base+int(in.a)]
			if lv.k != KindList {
				cwant, cgot = "List", lv.k
				goto confused
			}
			lo := (*listObj)(lv.p)
			idx := &stack[base+int(in.a)+1]
			if idx.n < lv.n {
				left--
				stack[base+int(in.d)] = lo.elems[idx.n]
				idx.n++
				pc += 2
			} else {
				pc = int(in.b)
			}
		default:
			err, errPC = m.internalErr(m.location(fn, pc), "unknown opcode "+itoa(int(op))), pc
			goto fail
		}
	}
confused:
	err, errPC = m.internalErr(m.location(fn, pc), "expected "+cwant+", got "+cgot.String()), pc
fail:
	pc = errPC
	a.stack, a.sp, a.fn, a.pc, a.base = stack, sp, fn, pc, base
	m.steps = m.boundary - left
	m.setErrorContext(err, a, fn, errPC)
	return 0, err
}

// takeWork takes the current instruction's work steps (machine.work) out of
// the loop's register left and returns it; after heavy work (m.force) it
// returns 0 with the boundary moved to the current step, so the slow path
// (clock, cancellation, progress) runs before the next instruction.
func (m *machine) takeWork(left int64) int64 {
	left -= m.extra
	m.extra = 0
	if m.force {
		m.boundary -= left
		left = 0
	}
	return left
}

// otherKind returns x unless it is want, else y: the kind that confused an
// instruction with two operands of kind want.
func otherKind(want, x, y Kind) Kind {
	if x != want {
		return x
	}
	return y
}

// heavyBytes is the size above which an instruction's work triggers an
// early clock check.
const heavyBytes = 64 << 10

func mulInt(x, y int64) (int64, bool) {
	if x == 0 || y == 0 {
		return 0, true
	}
	r := x * y
	if (x == -1 && y == math.MinInt64) || (y == -1 && x == math.MinInt64) || r/y != x {
		return 0, false
	}
	return r, true
}

func divInt(op Opcode, x, y int64) (int64, error) {
	if y == 0 {
		if op == DIV_INT {
			return 0, rtErr("division by zero")
		}
		return 0, rtErr("remainder by zero")
	}
	if y == -1 && x == math.MinInt64 {
		if op == DIV_INT {
			return 0, rtErr("integer overflow in division")
		}
		return 0, rtErr("integer overflow in remainder")
	}
	if op == DIV_INT {
		return x / y, nil
	}
	return x % y, nil
}

// contractError builds the message of a failed requires/ensures
// (docs/language.md "Contracts"). Each argument is shown with at most
// MaxShownValue bytes and the whole counterexample with about
// MaxShownMessage; cut values end with "…".
func contractError(fn *pfunc, kind, index int32, params []Value) *RuntimeError {
	var sb strings.Builder
	what := "precondition"
	contract := "requires"
	if kind == AssertEnsures {
		what, contract = "postcondition", "ensures"
	}
	fmt.Fprintf(&sb, "%s %d failed in `%s` [counterexample: (", what, index+1, text.Clip(fn.name, MaxShownValue))
	left := MaxShownMessage
	for i, p := range params {
		if i > 0 {
			sb.WriteString(", ")
		}
		if left <= 0 {
			sb.WriteString(text.Ellipsis)
			break
		}
		s := p.ShortString(min(MaxShownValue, left))
		left -= len(s)
		sb.WriteString(s)
	}
	sb.WriteString(")]")
	return &RuntimeError{Msg: sb.String(), Contract: contract}
}

// construct executes a constructor instruction over the operand stack
// stack (whose top is the instruction's last operand) and returns how many
// operands it consumed; the result replaces them.
func (m *machine) construct(op Opcode, a, b int32, stack []Value) (int, error) {
	sp := len(stack)
	var (
		v     Value
		n     int
		bytes int64
	)
	switch op {
	case MAKE_LIST:
		n = int(a)
		bytes = listOverhead + slotSize*int64(n)
		if err := m.charge(bytes); err != nil {
			return 0, err
		}
		v = listValue(append([]Value(nil), stack[sp-n:]...))
	case MAKE_MAP:
		n = 2 * int(a)
		keys := make([]string, int(a))
		vals := make([]Value, int(a))
		for i := range keys {
			keys[i] = stack[sp-n+2*i].str()
			vals[i] = stack[sp-n+2*i+1]
		}
		bytes = mapOverhead + (mapEntrySize+slotSize)*int64(a)
		if err := m.charge(bytes); err != nil {
			return 0, err
		}
		v = NewMapPairs(keys, vals)
		(*mapObj)(v.p).st.owner = m.token // the run may update it in place
	case MAKE_RECORD:
		n = int(b)
		if err := m.charge(recOverhead + slotSize*int64(n)); err != nil {
			return 0, err
		}
		v = recordValue(m.p.mod.Types[a], append([]Value(nil), stack[sp-n:]...))
	case WITH_FIELD:
		n = 2
		r := stack[sp-2].rec()
		if int(a) >= len(r.fields) {
			panic(typeConfusion{"a record with field " + itoa(int(a)), KindRecord})
		}
		if err := m.charge(recOverhead + slotSize*int64(len(r.fields))); err != nil {
			return 0, err
		}
		f := append([]Value(nil), r.fields...)
		f[a] = stack[sp-1]
		v = recordValue(r.typ, f)
	case MAKE_ENUM:
		t := m.p.mod.Types[a]
		if err := m.charge(enumOverhead + recOverhead); err != nil {
			return 0, err
		}
		switch vd := t.Variants[b]; vd.Shape {
		case UnitVariant:
			v = enumValue(t, int(b), Value{}, nil)
		case TupleVariant:
			n = 1
			v = enumValue(t, int(b), stack[sp-1], nil)
		default:
			n = len(vd.Fields)
			v = enumValue(t, int(b), Value{}, append(make([]Value, 0, n), stack[sp-n:]...))
		}
	case SOME, OK, ERR:
		n = 1
		if err := m.charge(boxOverhead); err != nil {
			return 0, err
		}
		switch op {
		case SOME:
			v = Some(stack[sp-1])
		case OK:
			v = Ok(stack[sp-1])
		default:
			v = Err(stack[sp-1])
		}
	}
	if s := v.heapSize(); s > m.memLimit {
		return 0, m.memError()
	}
	// The result replaces the n operands (n may be 0: a push).
	stack = stack[:cap(stack)]
	stack[sp-n] = v
	return n, nil
}
