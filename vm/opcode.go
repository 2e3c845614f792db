package vm

// Opcode is one bytecode operation. The compiler emits only the opcodes
// listed here (the "basic" set); the VM may fuse sequences of them into
// internal superinstructions when it prepares a module, but a fused
// instruction always counts as the number of basic instructions it replaces,
// so step counts never depend on optimisation.
//
// Stack effects are written `before → after` with the top of the stack on
// the right. The checker guarantees operand types, so typed opcodes
// (ADD_INT, LT_STR, …) do not re-check them; they still trap on overflow,
// division by zero and similar runtime errors.
type Opcode uint8

// Instr is one instruction: an opcode and up to two operands.
// The meaning of A and B is given per opcode below; unused operands are 0.
type Instr struct {
	Op Opcode
	A  int32
	B  int32
}

const (
	NOP Opcode = iota // —

	// Constants and locals.
	CONST // → constants[A]
	UNIT  // → ()
	NONE  // → None
	LOAD  // → locals[A]
	STORE // v → ; locals[A] = v
	POP   // v →
	DUP   // v → v v

	// Integer arithmetic (i64, checked: "integer overflow in addition", …;
	// DIV_INT/REM_INT trap with "division by zero" / "remainder by zero").
	ADD_INT // a b → a+b
	SUB_INT // a b → a-b
	MUL_INT // a b → a*b
	DIV_INT // a b → a/b (truncated toward zero)
	REM_INT // a b → a%b (sign of a)
	NEG_INT // a → -a

	// Float arithmetic. DIV_FLOAT by 0.0 traps with "division by zero".
	ADD_FLOAT
	SUB_FLOAT
	MUL_FLOAT
	DIV_FLOAT
	REM_FLOAT
	NEG_FLOAT

	// CONCAT: a b → a++b (both String). Checks the memory limit before
	// building the result.
	CONCAT

	// Comparisons. EQ/NE are structural on any two values of the same
	// static type (Float by IEEE ==). The ordered comparisons are typed.
	EQ
	NE
	LT_INT
	LE_INT
	GT_INT
	GE_INT
	LT_FLOAT
	LE_FLOAT
	GT_FLOAT
	GE_FLOAT
	LT_STR // byte-wise
	LE_STR
	GT_STR
	GE_STR

	NOT // b → !b (Bool)

	// Control flow. Jump targets (A) are absolute instruction indexes in
	// the current function.
	JMP              // → ; pc = A
	JMP_FALSE        // b → ; if !b { pc = A }
	JMP_TRUE         // b → ; if b { pc = A }
	JMP_FALSE_OR_POP // b → b (jump, keeping b) if !b, else b → (fall through): for &&
	JMP_TRUE_OR_POP  // b → b (jump, keeping b) if b, else b → (fall through): for ||

	// Calls.
	CALL       // a1..aB → r ; call Module.Functions[A] with B arguments
	CALL_VALUE // f a1..aB → r ; f is a function value (FnRef)
	RET        // r → ; return r to the caller (the entry frame ends the run)
	BUILTIN    // a1..aB → r ; call built-in function A (see builtins.go) with B arguments
	CAPCALL    // a1..aB → r ; effect built-in Effect(A) with B arguments: capability gateway, budget, event log
	FUNC       // → FnRef(A) ; function value of Module.Functions[A]

	// Constructors.
	MAKE_LIST   // e1..eA → List
	MAKE_MAP    // k1 v1 .. kA vA → Map (A pairs; a later duplicate key wins)
	MAKE_RECORD // f1..fB → Record of Module.Types[A]; fields in declaration order, B = field count
	WITH_FIELD  // r v → r' ; copy of record r with field A set to v (record spread)
	MAKE_ENUM   // [payload] → Enum value of Module.Types[A], variant B.
	//             Unit variant: pops nothing. Tuple variant: pops 1 payload.
	//             Struct variant: pops its n fields (declaration order).
	SOME // v → Some(v)
	OK   // v → Ok(v)
	ERR  // v → Err(v)

	// Access.
	FIELD   // r → r.fields[A] (Record)
	VFIELD  // e → field A of the struct-variant payload of enum value e
	PAYLOAD // w → inner ; payload of Some/Ok/Err, or the single payload of a tuple enum variant

	// Pattern matching.
	// TEST_TAG: w → w ; if tag(w) != B { pc = A }. Tags: Enum → variant
	// index; Option → None 0, Some 1; Result → Ok 0, Err 1; Bool → false 0, true 1.
	TEST_TAG
	// TEST_EQ: v → v ; if v != constants[B] { pc = A } (Int and String literal patterns)
	TEST_EQ
	// MATCH_FAIL: v → ; trap "no match found for value" (unreachable when
	// the checker proved exhaustiveness; kept as a safety net)
	MATCH_FAIL

	// Loops. FOR_NEXT: locals[A] holds the List being iterated and
	// locals[A+1] the next index (Int). If index < len: → elem and
	// locals[A+1]++; else pc = B and nothing is pushed.
	FOR_NEXT

	// Effects and actors.
	EMIT    // v → v ; append v to ui_output (output limit)
	SPAWN   // → ActorId ; start Module.Functions[A] (no parameters) as an actor
	SEND    // target msg → () ; deliver msg to actor target
	RECEIVE // → msg ; next message of the current actor (blocks the actor when empty)
	//         A = 0: the message is not checked. A = k > 0: the message must be
	//         a value of the static type Module.TypeSpecs[k-1] (typespec.go):
	//         same kind, records and enums of that very TypeDesc, elements of
	//         lists, maps, options and results checked deeply, KindAny
	//         accepting anything; otherwise the runtime error
	//         `receive: expected a message of type Int, got String`
	//         (`… type Job, got Point` for user types). Prepare rejects
	//         A < 0 or A > len(TypeSpecs).

	// Contracts. ASSERT: b → ; if !b, contract violation. A = kind
	// (AssertRequires, AssertEnsures), B = 0-based clause index. The message is
	// built from the function name and the values of its parameters.
	ASSERT

	numOpcodes
)

// Assert kinds used as the A operand of ASSERT.
const (
	AssertRequires = 0
	AssertEnsures  = 1
)

var opcodeNames = [...]string{
	NOP: "NOP", CONST: "CONST", UNIT: "UNIT", NONE: "NONE", LOAD: "LOAD", STORE: "STORE",
	POP: "POP", DUP: "DUP",
	ADD_INT: "ADD_INT", SUB_INT: "SUB_INT", MUL_INT: "MUL_INT", DIV_INT: "DIV_INT",
	REM_INT: "REM_INT", NEG_INT: "NEG_INT",
	ADD_FLOAT: "ADD_FLOAT", SUB_FLOAT: "SUB_FLOAT", MUL_FLOAT: "MUL_FLOAT",
	DIV_FLOAT: "DIV_FLOAT", REM_FLOAT: "REM_FLOAT", NEG_FLOAT: "NEG_FLOAT",
	CONCAT: "CONCAT",
	EQ:     "EQ", NE: "NE",
	LT_INT: "LT_INT", LE_INT: "LE_INT", GT_INT: "GT_INT", GE_INT: "GE_INT",
	LT_FLOAT: "LT_FLOAT", LE_FLOAT: "LE_FLOAT", GT_FLOAT: "GT_FLOAT", GE_FLOAT: "GE_FLOAT",
	LT_STR: "LT_STR", LE_STR: "LE_STR", GT_STR: "GT_STR", GE_STR: "GE_STR",
	NOT: "NOT",
	JMP: "JMP", JMP_FALSE: "JMP_FALSE", JMP_TRUE: "JMP_TRUE",
	JMP_FALSE_OR_POP: "JMP_FALSE_OR_POP", JMP_TRUE_OR_POP: "JMP_TRUE_OR_POP",
	CALL: "CALL", CALL_VALUE: "CALL_VALUE", RET: "RET", BUILTIN: "BUILTIN",
	CAPCALL: "CAPCALL", FUNC: "FUNC",
	MAKE_LIST: "MAKE_LIST", MAKE_MAP: "MAKE_MAP", MAKE_RECORD: "MAKE_RECORD",
	WITH_FIELD: "WITH_FIELD", MAKE_ENUM: "MAKE_ENUM", SOME: "SOME", OK: "OK", ERR: "ERR",
	FIELD: "FIELD", VFIELD: "VFIELD", PAYLOAD: "PAYLOAD",
	TEST_TAG: "TEST_TAG", TEST_EQ: "TEST_EQ", MATCH_FAIL: "MATCH_FAIL",
	FOR_NEXT: "FOR_NEXT",
	EMIT:     "EMIT", SPAWN: "SPAWN", SEND: "SEND", RECEIVE: "RECEIVE",
	ASSERT: "ASSERT",
}

// String returns the opcode's mnemonic.
func (op Opcode) String() string {
	if int(op) < len(opcodeNames) && opcodeNames[op] != "" {
		return opcodeNames[op]
	}
	return "OP(" + itoa(int(op)) + ")"
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	neg := n < 0
	if neg {
		n = -n
	}
	var b [24]byte
	i := len(b)
	for n > 0 {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
	}
	if neg {
		i--
		b[i] = '-'
	}
	return string(b[i:])
}
