package syntax

import (
	"fmt"
	"strings"
	"testing"
)

// benchSource builds a program of about n lines in the style of the
// compiler's benchmark programs (records, enums, matches, loops).
func benchSource(n int) string {
	var b strings.Builder
	b.WriteString("type Account { id: Int, owner: String, balance: Int, tags: List<String> }\n")
	b.WriteString("enum Event { Deposit(Int), Withdraw(Int), Rename { name: String }, Close }\n")
	for i := 0; strings.Count(b.String(), "\n") < n; i++ {
		fmt.Fprintf(&b, `
fn step%d(a: Account, xs: List<Int>) -> Account ensures result.balance >= 0 {
    let mut acc = a
    for x in xs {
        let ev = if x %% 2 == 0 { Event::Deposit(x) } else { Event::Withdraw(x / 2) }
        acc = match ev {
            Deposit(n) => Account { ..acc, balance: acc.balance + n },
            Withdraw(n) => Account { ..acc, balance: acc.balance - n },
            Rename { name } => Account { ..acc, owner: name },
            Close => acc,
        }
    }
    acc
}
`, i)
	}
	return b.String()
}

func benchParse(b *testing.B, src []byte, arena bool) {
	b.Helper()
	if _, errs := Parse("bench.ax", src); errs != nil {
		b.Fatal(errs)
	}
	var a Arena
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if !arena {
			Parse("bench.ax", src)
			continue
		}
		ParseIn(&a, "bench.ax", src)
		a.Reset()
	}
}

// BenchmarkParse200Lines parses a ~200-line file into a fresh arena (Parse).
func BenchmarkParse200Lines(b *testing.B) { benchParse(b, []byte(benchSource(200)), false) }

// BenchmarkParse200LinesRecycled parses it into a recycled arena, as
// compiler.Compile does.
func BenchmarkParse200LinesRecycled(b *testing.B) { benchParse(b, []byte(benchSource(200)), true) }
