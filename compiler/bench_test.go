package compiler_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/axpool/axpool/compiler"
)

// program20 is a typical small agent program (~20 lines).
const program20 = `type Item { name: String, price: Int, qty: Int }

fn total(items: List<Item>) -> Int {
    let mut t = 0
    for it in items {
        t = t + it.price * it.qty
    }
    t
}

fn label(n: Int) -> String {
    match n { 0 => "free", 1 => "cheap", _ => if n > 100 { "expensive" } else { "ok" } }
}

fn main() -> String {
    let items = [Item { name: "a", price: 3, qty: 2 }, Item { name: "b", price: 10, qty: 1 }]
    let t = total(items)
    label(t) ++ ": " ++ __builtin_int_to_string(t)
}
`

// program200 builds a ~200-line program exercising records, enums,
// matches, loops, closures over function values and contracts.
func program200() string {
	var b strings.Builder
	b.WriteString(`type Account { id: Int, owner: String, balance: Int, tags: List<String> }
enum Event { Deposit(Int), Withdraw(Int), Rename { name: String }, Close }
enum Outcome { Applied(Account), Rejected(String) }

fn apply(a: Account, e: Event) -> Outcome
    requires a.balance >= 0
{
    match e {
        Deposit(n) => if n <= 0 { Outcome::Rejected("bad amount") } else { Outcome::Applied(Account { ..a, balance: a.balance + n }) },
        Withdraw(n) => if n > a.balance { Outcome::Rejected("insufficient") } else { Outcome::Applied(Account { ..a, balance: a.balance - n }) },
        Rename { name } => Outcome::Applied(Account { ..a, owner: name }),
        Close => Outcome::Rejected("closed"),
    }
}
`)
	for i := 0; i < 12; i++ {
		fmt.Fprintf(&b, `
fn step%d(a: Account, xs: List<Int>) -> Account ensures result.balance >= 0 {
    let mut acc = a
    for x in xs {
        let ev = if x %% 2 == 0 { Event::Deposit(x) } else { Event::Withdraw(x / 2) }
        acc = match apply(acc, ev) {
            Applied(next) => next,
            Rejected(why) => {
                let t = list_push(acc.tags, why)
                Account { ..acc, tags: t }
            }
        }
    }
    acc
}
`, i)
	}
	b.WriteString(`
fn summarize(a: Account) -> Map<String, String> {
    let m = __builtin_map_set({}, "owner", a.owner)
    __builtin_map_set(m, "balance", __builtin_int_to_string(a.balance))
}

fn main() -> Map<String, String> {
    let mut a = Account { id: 1, owner: "ann", balance: 10, tags: [] }
`)
	for i := 0; i < 12; i++ {
		fmt.Fprintf(&b, "    a = step%d(a, [1, 2, 3, %d])\n", i, i)
	}
	b.WriteString("    summarize(a)\n}\n")
	return b.String()
}

func benchCompile(b *testing.B, src string) {
	b.Helper()
	data := []byte(src)
	if _, errs := compiler.Compile(data, compiler.Options{}); errs != nil {
		b.Fatal(errs)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, errs := compiler.Compile(data, compiler.Options{}); errs != nil {
			b.Fatal(errs)
		}
	}
}

func BenchmarkCompile20Lines(b *testing.B) { benchCompile(b, program20) }

func BenchmarkCompile200Lines(b *testing.B) { benchCompile(b, program200()) }

func BenchmarkCompile1MB(b *testing.B) { benchCompile(b, largeSource(compiler.MaxSourceSize)) }

func TestBenchmarkProgramsCompile(t *testing.T) {
	for name, src := range map[string]string{"20": program20, "200": program200()} {
		if n := strings.Count(src, "\n"); (name == "20" && (n < 18 || n > 25)) || (name == "200" && (n < 190 || n > 260)) {
			t.Errorf("program %s has %d lines", name, n)
		}
		mustCompile(t, src, compiler.Options{})
	}
}
